-- queue.status: one row per known queue: ready, scheduled (not yet due: the states scheduled
-- and failed of queue.states()), running and dead jobs, and the age of the oldest ready job. Reads the whole live table:
-- meant for operators, not for the hot path.
create or replace function queue.status()
returns table (
    queue text, ready bigint, scheduled bigint, running bigint, dead bigint,
    oldest_ready_age interval
)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    with live as (
        select c.queue, sum(c.ready)::bigint as ready, sum(c.scheduled)::bigint as scheduled,
            sum(c.running)::bigint as running, now() - min(c.oldest_ready) as oldest_ready_age
        from queue._live_counts() as c group by c.queue
    ),
    dead as (select d.queue, count(*) as dead from queue.dead_letters as d group by d.queue),
    names as (
        select l.queue from live as l
        union select d.queue from dead as d
        union select q.queue from queue.queues as q
    )
    select n.queue, coalesce(l.ready, 0), coalesce(l.scheduled, 0), coalesce(l.running, 0),
        coalesce(d.dead, 0), l.oldest_ready_age
    from names as n
    left join live as l on l.queue = n.queue
    left join dead as d on d.queue = n.queue
    order by n.queue
$$;

comment on function queue.status() is 'Per queue: ready, scheduled, running, dead, oldest ready age.';
revoke all on function queue.status() from public;
grant execute on function queue.status() to andal_admin, andal_worker, andal_monitor;
