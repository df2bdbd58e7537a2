-- cache.reset: empty the shared cache and start a new epoch, as a crash would. Every local
-- cache learns it at its next cache.changes_since call and flushes. Takes an ACCESS
-- EXCLUSIVE lock on cache.entries (the size counter cache.usage, the deferred writes) for
-- the truncation. Returns the new epoch.
-- Raises nothing.
create or replace function cache.reset() returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_epoch bigint := nextval('cache.epoch_seq');
begin
    -- a write deferred before the reset would bring an old value back: it goes too
    truncate cache.entries, cache.usage, cache.deferred_writes;
    update cache.usage_state set full_since = null;
    insert into cache.epoch as e (epoch) values (v_epoch)
    on conflict (id) do update set epoch = excluded.epoch, started_at = now();
    return v_epoch;
end
$$;

comment on function cache.reset() is
'Empty the shared cache and start a new epoch (every local cache flushes).';
revoke all on function cache.reset() from public;
grant execute on function cache.reset() to andal_admin;
