-- cache._view_changes: how many changes the sources of `view` have seen, a monotonic count
-- (until statistics are reset): the rows inserted, updated and deleted in every source (its
-- leaf partitions for a partitioned table), from PostgreSQL's cumulative statistics, plus
-- the TRUNCATEs counted by the tracking trigger.
-- Why the statistics: they cost writers nothing (autovacuum maintains them anyway), and a
-- transaction's counts reach them only after it ended. So a count read before a refresh
-- takes its snapshot covers only changes that snapshot sees (or rolled back): a change is
-- never marked as refreshed before it is, at worst counted late (the statistics are flushed
-- within about a second of a writer going idle) and refreshed once more.
create or replace function cache._view_changes(view regclass) returns bigint
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce((
        select sum(pg_stat_get_tuples_inserted(p.relid) + pg_stat_get_tuples_updated(p.relid)
                   + pg_stat_get_tuples_deleted(p.relid))
        from cache.view_sources as s
        cross join lateral (
            select s.source::oid as relid  -- a plain table (a partitioned one counts 0 itself)
            union
            select t.relid from pg_partition_tree(s.source) as t where t.isleaf
        ) as p
        where s.view = $1
    ), 0)::bigint
    + coalesce((
        select sum(c.changes)
        from cache.view_sources as s
        join cache.source_changes as c on c.source = s.source::oid
        where s.view = $1
    ), 0)::bigint
$$;

comment on function cache._view_changes(regclass) is
'Changes of the sources a view tracks: rows from the statistics, plus counted TRUNCATEs.';
revoke all on function cache._view_changes(regclass) from public;
