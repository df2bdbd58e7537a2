-- cache.refill: cache.put for a refill after a miss (the value read from the primary store):
-- the same write, whose transaction commits without waiting for the WAL flush
-- (synchronous_commit off until that transaction ends). Losing such a write in a crash is
-- harmless: a crash starts a new cache epoch and every local cache flushes, so the next read
-- misses and refills again. Call it in a transaction of its own (autocommit), never in one
-- whose other writes must survive a crash once committed: they would commit the same way.
-- The Python cache refills with it on its own autocommit connections.
-- Raises: what cache.put raises.
create or replace function cache.refill(
    key text, value jsonb, ttl interval default null, if_version bigint default null
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform set_config('synchronous_commit', 'off', true);
    return cache._put(refill.key, refill.value, refill.ttl, refill.if_version, null, null,
        false);
end
$$;

comment on function cache.refill(text, jsonb, interval, bigint) is
'cache.put for a refill after a miss: its transaction commits without waiting for the WAL flush.';
revoke all on function cache.refill(text, jsonb, interval, bigint) from public;
grant execute on function cache.refill(text, jsonb, interval, bigint)
to andal_producer, andal_worker, andal_admin;
