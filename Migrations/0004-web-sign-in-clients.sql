-- web pages: identity providers' web clients for the browser sign-in
ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS label text CHECK (length(label) BETWEEN 1 AND 100);
ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS client_id text CHECK (length(client_id) BETWEEN 1 AND 500);
ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS client_secret bytea;
