-- cache.prune: maintenance. Deletes log rows older than log_keep (default
-- cache.config.log_keep) whose transactions have ended, and entries that have been stale or
-- expired for longer than entries_keep. Run it periodically (pg_cron, or an admin job).
-- Guarantees: a reader whose watermark is at or below the highest pruned transaction id is
-- told to flush by cache.changes_since (it may have missed a pruned change), never left
-- stale. Entries locked by a writer are skipped. Their sizes leave the cache's total; when
-- the total is over cache.config.max_total_bytes, values are evicted (expired first, then
-- the nearest expiry, see cache._evict) down to nine tenths of it, and the cache is no
-- longer full. Waits for no writer (SKIP LOCKED). Returns how many rows went (entries:
-- deleted ones, not evicted ones).
-- Raises: 22023 negative intervals.
create or replace function cache.prune(
    log_keep interval default null, entries_keep interval default '1 day'
) returns table (log_rows bigint, entries bigint)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_keep interval;
    v_xid xid8;
    v_log bigint;
    v_entries bigint;
    v_bytes bigint;
begin
    perform queue._check_interval(prune.log_keep, 'log_keep', false, false);
    perform queue._check_interval(prune.entries_keep, 'entries_keep', false, false);
    select coalesce(prune.log_keep, c.log_keep) into v_keep from cache.config as c;
    with gone as (
        delete from cache.log as l
        where l.at < now() - v_keep
          and l.xid < pg_snapshot_xmin(pg_current_snapshot())
        returning l.xid
    )
    select count(*), max(g.xid) into v_log, v_xid from gone as g;
    if v_xid is not null then
        update cache.log_state as s
        set pruned_xid = greatest(s.pruned_xid, v_xid), pruned_at = now();
    end if;

    with doomed as (
        select e.key from cache.entries as e
        where (e.stale or e.value is null or e.expires_at <= now())
          and case when e.stale or e.value is null
                   then coalesce(e.invalidated_at, e.written_at)
                   else e.expires_at end
              < now() - coalesce(prune.entries_keep, interval '1 day')
        for update skip locked
    ),
    gone as (
        delete from cache.entries as e using doomed as d where e.key = d.key returning e.size
    )
    select count(*), coalesce(sum(g.size), 0) into v_entries, v_bytes from gone as g;
    perform cache._usage_add(-v_bytes, 0);
    -- over the size bound: evict down to nine tenths of it, then the cache is not full
    v_bytes := cache._usage() - cache._cap() * 9 / 10;
    if cache._usage() > cache._cap() then
        perform cache._evict(v_bytes);
    end if;
    if cache._usage() <= cache._cap() then
        perform cache._set_full(false);
    end if;
    -- fold the sessions' slots of the size counter into slot 0 (those not held by a writer)
    with folded as (
        delete from cache.usage as u
        where u.slot in (
            select s.slot from cache.usage as s where s.slot <> 0 for update skip locked)
        returning u.bytes
    )
    select coalesce(sum(f.bytes), 0) into v_bytes from folded as f;
    if v_bytes <> 0 then
        insert into cache.usage as u (slot, bytes) values (0, v_bytes)
        on conflict (slot) do update set bytes = u.bytes + excluded.bytes;
    end if;
    return query select v_log, v_entries;
end
$$;

comment on function cache.prune(interval, interval) is
'Maintenance: cut the log (readers behind the cut flush) and drop long-stale entries.';
revoke all on function cache.prune(interval, interval) from public;
grant execute on function cache.prune(interval, interval) to andal_admin;
