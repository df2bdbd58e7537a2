-- cache.invalidate: mark `key` stale; returns its new version.
--
-- The old value is kept, flagged stale (readers that accept stale data may be served it
-- while one refresh runs, rule 4); a key with no entry gets a tombstone, so its version and
-- change statistics survive. Appends to the log and sends the NOTIFY hint in the caller's
-- transaction; counts as a change for the adaptive TTL.
-- Raises: 22004 null key; 22023 bad key.
create or replace function cache.invalidate(key text, reason text default null)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform cache._check_key(invalidate.key);
    return cache._apply(invalidate.key, 'invalidate', null, null, invalidate.reason);
end
$$;

comment on function cache.invalidate(text, text) is
'Mark a key stale (logged, notified); returns its new version.';
revoke all on function cache.invalidate(text, text) from public;
grant execute on function cache.invalidate(text, text) to andal_worker, andal_admin;
