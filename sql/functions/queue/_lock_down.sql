-- queue._lock_down: harden this database against roles without andal's grants. PostgreSQL
-- has no privileges on notification channels: any role that can connect may LISTEN to
-- andal's channels and NOTIFY on them. This function
-- * revokes CONNECT and TEMPORARY on the database from PUBLIC and grants CONNECT to
--   andal_producer, andal_worker, andal_admin and andal_monitor (their members keep
--   connecting; a role that needs the database for something else must be granted CONNECT
--   explicitly);
-- * sets andal.notify_names = off for the database: notifications then carry no names
--   (andal_jobs '' instead of the queue, andal_ops '{"event":"dead"}' without job and queue,
--   andal_cache '' instead of a transaction id). Listeners treat every notification as a hint
--   to re-read, never as a fact, so they work the same; a worker then wakes for every
--   queue's jobs, not only its own (one claim that finds nothing).
-- Idempotent; takes effect for new sessions. Private (granted to nobody): the installing role (the
-- database's owner) runs it, as `andal install --lock-down` does.
-- Returns what it did, one line each.
create or replace function queue._lock_down() returns setof text
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    execute format('revoke connect, temporary on database %I from public', current_database());
    return next 'revoked connect, temporary on the database from public';
    execute format('grant connect on database %I to andal_producer, andal_worker, andal_admin, '
        'andal_monitor', current_database());
    return next 'granted connect to andal_producer, andal_worker, andal_admin, andal_monitor';
    execute format('alter database %I set andal.notify_names = off', current_database());
    return next 'notifications carry no names (andal.notify_names = off)';
end
$$;

-- The functions that notify read andal.notify_names through queue._notify (on unless this
-- function turned it off); the earlier helper of that name is gone.
drop function if exists queue._notify_names();

comment on function queue._lock_down() is
'Revoke CONNECT and TEMPORARY from PUBLIC on this database; notifications without names.';
revoke all on function queue._lock_down() from public;
