-- cache.refresh_due: enqueue one refresh job per registered view that is due. Run it
-- periodically (pg_cron, or an admin's maintenance tick); it is cheap when nothing is due.
-- A view is due when its sources changed since its last refresh (pending <> 0: rows
-- inserted, updated or deleted, and TRUNCATEs; see cache._view_changes) and either
-- pending >= max_changes, or its data is at least max_lag old (now - the start of its last
-- refresh, or its registration), or the counts went backwards (statistics reset, crash).
-- The job: queue 'andal.refresh', payload {"view": "<schema.name>"}, category
-- 'refresh:<schema.name>' (the gate lets one refresh of a view run at a time), dedup_key the
-- view's name (one live job per view: a pending or running refresh absorbs new requests).
-- It is run by calling cache.refresh_view(view) (andal.cache.refresh_handler in Python).
-- Also folds the TRUNCATE counters of ended backends into one row per table (sums unchanged).
-- Returns one row per due view: the live job's id, the pending changes and the lag.
-- Raises nothing of its own (queue.enqueue's errors pass through).
create or replace function cache.refresh_due()
returns table (view regclass, job_id bigint, pending bigint, lag interval)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_r record;
    v_name text;
begin
    perform cache._primary_only('cache.refresh_due');
    with gone as (
        delete from cache.source_changes as c
        where c.backend <> 0
          and not exists (select from pg_catalog.pg_stat_activity as a where a.pid = c.backend)
        returning c.source, c.changes, c.last_change_at
    )
    insert into cache.source_changes as c (source, backend, changes, last_change_at)
    select g.source, 0, sum(g.changes), max(g.last_change_at) from gone as g group by g.source
    on conflict (source, backend) do update
    set changes = c.changes + excluded.changes,
        last_change_at = greatest(c.last_change_at, excluded.last_change_at);

    for v_r in
        select v.view as v_view, v.max_lag, v.max_changes,
            cache._view_changes(v.view) - v.seen_changes as v_pending,
            now() - coalesce(v.refreshed_at, v.registered_at) as v_lag
        from cache.views as v
        join pg_catalog.pg_class as c on c.oid = v.view
        order by v.view
    loop
        continue when v_r.v_pending = 0;
        continue when v_r.v_pending > 0 and v_r.v_pending < v_r.max_changes
            and v_r.v_lag < v_r.max_lag;
        v_name := v_r.v_view::text;
        return query select v_r.v_view,
            queue.enqueue(
                payload => jsonb_build_object('view', v_name),
                queue => 'andal.refresh',
                category => 'refresh:' || case when length(v_name) <= 120 then v_name
                                               else v_r.v_view::oid::text end,
                dedup_key => left(v_name, 512)),
            v_r.v_pending, v_r.v_lag;
    end loop;
end
$$;

comment on function cache.refresh_due() is
'Enqueue one refresh job per materialized view past its lag or change budget.';
revoke all on function cache.refresh_due() from public;
grant execute on function cache.refresh_due() to andal_admin;
