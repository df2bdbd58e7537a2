-- queue.workers: one row per worker holding jobs or registered (queue.register_worker, live):
-- its running jobs, their queues, the age of its oldest claim, the time left on its nearest
-- lease, and its open sessions. A worker is known by its registration or by the jobs it
-- holds, never by parsing session names: a session named like a worker is not a worker, and
-- a worker whose session names were cut at 63 bytes is one row. connections counts the
-- sessions with the exact names the Python driver gives a registered worker's sessions
-- ('andal <worker>', 'andal <worker> listen', 'andal <worker> vacuum', each cut as
-- PostgreSQL cuts application_name); 0 for a worker that does not register (an older driver,
-- another client), which is listed while it holds jobs. The slots and the rest of what a
-- worker registers: queue.registered_workers(). For operators (`andal status`), not the hot
-- path.
create or replace function queue.workers()
returns table (
    worker text, running bigint, queues text [], oldest_claim_age interval,
    next_lease_expiry interval, connections bigint
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    with held as (
        select j.worker, count(*) as running, array_agg(distinct j.queue) as queues,
            now() - min(j.claimed_at) as oldest_claim_age,
            min(j.lease_expires_at) - now() as next_lease_expiry
        from queue.jobs as j
        where j.status = 'running' and j.worker is not null
        group by j.worker
    ),
    live as (
        select r.worker,
            array[left('andal ' || r.worker, 63), left('andal ' || r.worker || ' listen', 63),
                left('andal ' || r.worker || ' vacuum', 63)] as names
        from queue.worker_registrations as r
        where r.last_seen_at + r.expire_after >= now()
    ),
    sessions as (
        select l.worker, count(a.pid) as connections
        from live as l
        left join pg_catalog.pg_stat_activity as a
            on a.datname = pg_catalog.current_database() and a.application_name = any (l.names)
        group by l.worker
    )
    select coalesce(h.worker, s.worker), coalesce(h.running, 0), coalesce(h.queues, '{}'),
        h.oldest_claim_age, h.next_lease_expiry, coalesce(s.connections, 0)
    from held as h full join sessions as s on s.worker = h.worker
    order by 1;
end
$$;

-- queue.unserved_queues: the queues with ready jobs that no live worker takes: no worker
-- queue.workers() lists holds a job of the queue, nor registered for it. A worker that claims
-- without registering counts only while it holds a job of the queue. For operators (the
-- banner of `andal web`), not the hot path: it reads the live table once.
create or replace function queue.unserved_queues()
returns table (queue text, ready bigint)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    with served as (
        select q.name
        from queue.workers() as w
        left join queue.registered_workers() as r on r.worker = w.worker
        cross join lateral unnest(w.queues || coalesce(r.queues, '{}')) as q (name)
    )
    select c.queue, sum(c.ready)::bigint
    from queue._live_counts() as c
    where c.ready > 0 and c.queue not in (select s.name from served as s)
    group by c.queue
    order by c.queue
$$;

comment on function queue.workers() is
'Per worker: running jobs, their queues, oldest claim, nearest lease expiry, open sessions.';
revoke all on function queue.workers() from public;
grant execute on function queue.workers() to andal_admin, andal_worker, andal_monitor;
comment on function queue.unserved_queues() is
'Queues with ready jobs that no live worker holds a job of or registered for.';
revoke all on function queue.unserved_queues() from public;
grant execute on function queue.unserved_queues() to andal_admin, andal_worker, andal_monitor;
