-- Campus Attest on Citus: run on the coordinator as the schema's owner, after `attest migrate`
-- (or let `attest citus distribute` run it). Generated from CitusLayout; a test keeps it equal.
BEGIN;
-- Foreign keys from distributed tables to reference tables made in one transaction need this (Citus docs).
SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
-- Shared tables: a copy on every node.
SELECT create_reference_table('campuses');
SELECT create_reference_table('schema_migrations');
SELECT create_reference_table('community_regions');
SELECT create_reference_table('community_days');
SELECT create_reference_table('shc_directory');
-- Tenant tables: sharded by campus, co-located with users, foreign-key targets first.
SELECT create_distributed_table('users', 'campus_id');
SELECT create_distributed_table('questionnaires', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('campus_oidc_issuers', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('campus_plugins', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('sessions', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('id_token_uses', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('sign_in_nonces', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('badge_keys', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('badge_subject_keys', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('attestations', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('daily_stats', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('daily_answer_counts', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('member_changes', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('purge_state', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('testing_locations', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('notification_outbox', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('reminder_runs', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('audit_log', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('journal_entries', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('journal_audio', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('journal_audio_chunks', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('episodes', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('journal_shares', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('journal_share_openings', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('member_settings', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('door_counts', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('member_places', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('member_profiles', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('member_notifications', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('push_keys', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('push_subscriptions', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('machine_tokens', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('test_results', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('isolations', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('exemptions', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('shc_issuers', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('vaccinations', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('directory_groups', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('directory_group_members', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('role_mappings', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('guest_visits', 'campus_id', colocate_with => 'users');
SELECT create_distributed_table('member_health', 'campus_id', colocate_with => 'users');
COMMIT;
