-- questionnaire versions append-only for the application; attestations' key to them dropped
ALTER TABLE attestations DROP CONSTRAINT IF EXISTS attestations_campus_id_survey_version_fkey;
REVOKE UPDATE, DELETE ON questionnaires FROM attest_app;
