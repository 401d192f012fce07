-- sessions an operator minted are marked, and open no member's private data
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS by_operator boolean NOT NULL DEFAULT false;
