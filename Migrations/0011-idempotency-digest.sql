-- an Idempotency-Key bound to the digest of what it was sent with
ALTER TABLE attestations ADD COLUMN IF NOT EXISTS idempotency_digest bytea CHECK (length(idempotency_digest) = 32);
