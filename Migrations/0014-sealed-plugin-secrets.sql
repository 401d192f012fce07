-- plugins' secret settings sealed apart from the others
ALTER TABLE campus_plugins ADD COLUMN IF NOT EXISTS secrets bytea;
ALTER TABLE campus_plugins ADD COLUMN IF NOT EXISTS secret_names text[] NOT NULL DEFAULT '{}';
