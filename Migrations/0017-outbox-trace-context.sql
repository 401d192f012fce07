-- the outbox keeps the trace of what caused each event
ALTER TABLE notification_outbox ADD COLUMN IF NOT EXISTS trace_parent text CHECK (length(trace_parent) <= 256);
