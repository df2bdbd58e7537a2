-- queue.workers: one row per worker holding jobs or connected to this database: its running
-- jobs, their queues, the age of its oldest claim, the time left on its nearest lease, and
-- its open sessions (the driver names them 'andal <worker>', 'andal <worker> listen' and
-- 'andal <worker> vacuum'). For operators (`andal status`), not the hot path.
create or replace function queue.workers()
returns table (
    worker text, running bigint, queues text [], oldest_claim_age interval,
    next_lease_expiry interval, connections bigint
)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    with held as (
        select j.worker, count(*) as running, array_agg(distinct j.queue) as queues,
            now() - min(j.claimed_at) as oldest_claim_age,
            min(j.lease_expires_at) - now() as next_lease_expiry
        from queue.jobs as j
        where j.status = 'running' and j.worker is not null
        group by j.worker
    ),
    sessions as (
        select regexp_replace(substr(a.application_name, 7), ' (listen|vacuum)$', '') as worker,
            count(*) as connections
        from pg_catalog.pg_stat_activity as a
        where a.datname = pg_catalog.current_database() and a.application_name like 'andal %'
        group by 1
    )
    select coalesce(h.worker, s.worker), coalesce(h.running, 0), coalesce(h.queues, '{}'),
        h.oldest_claim_age, h.next_lease_expiry, coalesce(s.connections, 0)
    from held as h full join sessions as s on s.worker = h.worker
    order by 1
$$;

comment on function queue.workers() is
'Per worker: running jobs, their queues, oldest claim, nearest lease expiry, open sessions.';
revoke all on function queue.workers() from public;
grant execute on function queue.workers() to andal_admin, andal_worker, andal_monitor;
