-- cache.get_many: the shared entries of several keys, one row per key that has an entry
-- (in no particular order; duplicates in `keys` are answered once). Same columns and stale
-- rules as cache.get; with refresh_queue every missing or stale key gets one refresh job.
-- A caller that may not enqueue (a worker) may name only the queues listed in
-- cache.config.refresh_queues.
-- No deadlock: refresh jobs are enqueued in one order (by key), whatever the order of `keys`.
-- Isolation: any level without refresh_queue; with it READ COMMITTED (55000 otherwise, up
-- front: the refresh job is deduplicated against other transactions').
-- Raises: 22004 null keys or a null element; 22023 a bad key, more than 10000 keys; 42501 a
-- refresh_queue the caller may not use; 55000 refresh_queue outside READ COMMITTED.
create or replace function cache.get_many(keys text[], refresh_queue text default null)
returns table (
    key text, value jsonb, version bigint, stale boolean, expires_at timestamptz,
    checksum text
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_key text;
begin
    perform cache._primary_only('cache.get_many');
    if get_many.keys is null then
        raise exception 'keys must not be null' using errcode = '22004';
    end if;
    if cardinality(get_many.keys) > 10000 then
        raise exception 'keys must hold at most 10000 keys (got %)', cardinality(get_many.keys)
            using errcode = '22023';
    end if;
    foreach v_key in array get_many.keys loop
        perform cache._check_key(v_key, 'keys element');
    end loop;
    if get_many.refresh_queue is not null then
        perform cache._check_key(get_many.refresh_queue, 'refresh_queue');
        perform cache._check_refresh_queue(get_many.refresh_queue);
        -- a refresh job is deduplicated against other transactions' (queue.enqueue)
        if current_setting('transaction_isolation') <> 'read committed' then
            raise exception 'cache.get_many with a refresh_queue must run at READ COMMITTED '
                'isolation (not %)', current_setting('transaction_isolation')
                using errcode = '55000',
                hint = 'Read without refresh_queue, or in a READ COMMITTED transaction.';
        end if;
        -- Refresh jobs are enqueued in one canonical order (each key once, sorted), so two
        -- readers of overlapping keys in different orders never wait on each other in a
        -- cycle (no deadlock).
        for v_key in
            select distinct k.key collate "C" from unnest(get_many.keys) as k (key)
            left join cache.entries as e on e.key = k.key
            where e.key is null or e.stale or e.value is null or e.expires_at <= now()
            order by 1
        loop
            perform cache._enqueue_refresh(v_key, get_many.refresh_queue);
        end loop;
    end if;
    return query
    select e.key, e.value, e.version,
        e.stale or e.value is null or coalesce(e.expires_at <= now(), false),
        e.expires_at, e.checksum
    from cache.entries as e
    where e.key = any (get_many.keys);
end
$$;

comment on function cache.get_many(text[], text) is
'The shared entries of several keys (one row per key that has an entry).';
revoke all on function cache.get_many(text[], text) from public;
grant execute on function cache.get_many(text[], text) to andal_worker, andal_admin;
