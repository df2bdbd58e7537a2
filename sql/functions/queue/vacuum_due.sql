-- queue.vacuum_due: andal's tables (schemas queue and cache) that a worker vacuuming them
-- with autovacuum off should vacuum now: changed since their last vacuum or analyze (dead
-- rows, or rows modified since the last analyze) and not vacuumed, by anyone, in the last
-- `every`. `allowed`: whether the session's role (session_user, the role it logged in as)
-- may vacuum the table (its owner's or the database owner's privileges; a superuser has
-- both): VACUUM skips the others with a warning. The shards of a partitioned table (a sharded queue.jobs) count as their parent,
-- which is vacuumed as one (VACUUM recurses into its partitions). Most dead rows first.
-- VACUUM itself cannot run in a function: the caller runs `vacuum (analyze)` on each.
-- Reads the statistics views: works on a hot standby.
-- Raises: 22004 null every; 22023 a negative every, or one past 1000 years.
create or replace function queue.vacuum_due(every interval)
returns table (schema_name text, table_name text, dead bigint, allowed boolean)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform queue._check_interval(vacuum_due.every, 'every');
    return query
    select s.schemaname::text, coalesce(p.relname, c.relname)::text, sum(s.n_dead_tup)::bigint,
        bool_and(pg_has_role(session_user, coalesce(p.relowner, c.relowner), 'USAGE')
            or pg_has_role(session_user, d.datdba, 'USAGE'))
    from pg_stat_user_tables as s
    join pg_class as c on c.oid = s.relid
    left join pg_inherits as i on i.inhrelid = s.relid
    left join pg_class as p on p.oid = i.inhparent
    join pg_database as d on d.datname = current_database()
    where s.schemaname in ('queue', 'cache')
      and (s.n_dead_tup > 0 or s.n_mod_since_analyze > 0)
      and coalesce(greatest(s.last_vacuum, s.last_autovacuum), '-infinity')
          < now() - vacuum_due.every
    group by 1, 2
    order by 3 desc, 1, 2;
end
$$;

comment on function queue.vacuum_due(interval) is
'andal''s tables changed and not vacuumed in the last `every`, and whether the caller may vacuum each.';
revoke all on function queue.vacuum_due(interval) from public;
grant execute on function queue.vacuum_due(interval) to andal_worker, andal_admin;
