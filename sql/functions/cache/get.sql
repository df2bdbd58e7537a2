-- cache.get: the shared cache's entry for `key`: one row, or none when the key has no entry.
--
-- stale is true when the entry was invalidated or its TTL passed: a reader that accepts
-- stale data may use `value` while it is refreshed; a reader that does not must load from
-- the primary store (and may refill with cache.put(..., if_version => version)). A row with
-- a null value is a tombstone (invalidated, no value) and is always stale. `checksum` is
-- md5 of the value's JSON text, for read-repair (cache.validate).
-- With refresh_queue, a missing or stale key gets exactly one refresh job in that queue
-- (payload {"key": key}, deduplicated by key across all workers: one refresh per key).
-- A caller that may not enqueue (a worker) may name only the queues listed in
-- cache.config.refresh_queues.
-- Raises: 22004 null key; 22023 bad key or refresh_queue name; 42501 a refresh_queue the
-- caller may not use (checked when a refresh job is due).
create or replace function cache.get(key text, refresh_queue text default null)
returns table (
    value jsonb, version bigint, stale boolean, expires_at timestamptz, checksum text
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
rows 1
as $$
#variable_conflict use_column
declare
    v_e cache.entries;
    v_stale boolean;
begin
    perform cache._primary_only('cache.get');
    perform cache._check_key(get.key);
    select e.* into v_e from cache.entries as e where e.key = get.key;
    v_stale := v_e.stale or v_e.value is null or coalesce(v_e.expires_at <= now(), false);
    if get.refresh_queue is not null and (v_e.key is null or v_stale) then
        perform cache._check_key(get.refresh_queue, 'refresh_queue');
        perform cache._check_refresh_queue(get.refresh_queue);
        perform cache._enqueue_refresh(get.key, get.refresh_queue);
    end if;
    if v_e.key is not null then
        return query select v_e.value, v_e.version, v_stale, v_e.expires_at, v_e.checksum;
    end if;
end
$$;

comment on function cache.get(text, text) is
'The shared entry of a key (value, version, stale, expires_at, checksum), or no row.';
revoke all on function cache.get(text, text) from public;
grant execute on function cache.get(text, text) to andal_worker, andal_admin;
