-- Pausing a queue: queue.pause and queue.resume, and the claim's private helper
-- queue._unpaused_queues.
--
-- A paused queue's jobs are not claimed: every claim (of that queue, of a list naming it, or
-- of every queue) leaves them pending. Jobs already running finish as usual (complete,
-- fail, heartbeat and lease expiry work as before), and enqueue still adds jobs. The flag is
-- the queue's `paused` in queue.queues, shown by queue.stats().

-- _unpaused_queues: the queues a claim of `queues` may take jobs from while some queue is
-- paused: the listed ones that are not paused, or (queues null) the queues whose ready jobs
-- can be among the claim's best `batch`, leaving out the paused ones. For every queue the
-- heads of the two claim-order indexes (ungated and gated ready jobs, 4 * batch + 16 each,
-- read without locking) decide when they can: when every ready job is in them, or when
-- they hold `batch` ready ungated jobs of queues not paused and every gated job outside
-- the gated head comes after the batch-th of those in claim order; then the best `batch`
-- jobs of the queues not paused are all in the heads, and the answer is the heads' queues
-- not paused. The cost is then the heads and the paused queues' rows, whatever the number
-- of queues. Otherwise (a paused queue's backlog fills the head) the queues with pending
-- jobs are enumerated by skip scans of the claim indexes (queue._pending_queues: one index
-- probe per queue), never by reading the backlog.
drop function if exists queue._unpaused_queues(text[]);
create or replace function queue._unpaused_queues(queues text[], batch int) returns text []
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_paused text[] := array(select p.queue from queue.queues as p where p.paused);
    v_head int := 4 * batch + 16;
    v_u record;  -- the ungated head: its size, and the batch-th job of a queue not paused
    v_g record;  -- the gated head: its size and its last job
begin
    if queues is not null then
        return array(select distinct q.name from unnest(queues) as q (name)
                     where q.name <> all (v_paused) order by q.name);
    end if;
    select count(*) as n, (array_agg(h.k order by h.k)
            filter (where h.queue <> all (v_paused)))[batch] as bar,
        array_agg(distinct h.queue) filter (where h.queue <> all (v_paused)) as open
    into v_u
    from (select j.queue, row(- j.priority, j.available_at, j.id) as k
          from queue.jobs as j
          where j.status = 'pending' and j.category is null and j.available_at <= now()
          order by j.priority desc, j.available_at, j.id
          limit v_head) as h;
    select count(*) as n, (array_agg(h.k order by h.k desc))[1] as last,
        array_agg(distinct h.queue) filter (where h.queue <> all (v_paused)) as open
    into v_g
    from (select j.queue, row(- j.priority, j.available_at, j.id) as k
          from queue.jobs as j
          where j.status = 'pending' and j.category is not null and j.available_at <= now()
          order by j.priority desc, j.available_at, j.id
          limit v_head) as h;
    if (v_u.n < v_head and v_g.n < v_head)
        or (v_u.bar is not null and (v_g.n < v_head or v_g.last > v_u.bar)) then
        return array(select distinct q.name
                     from unnest(coalesce(v_u.open, '{}') || coalesce(v_g.open, '{}')) as q (name)
                     order by q.name);
    end if;
    return array(select p.queue from queue._pending_queues() as p (queue)
                 where p.queue <> all (v_paused) order by p.queue);
end
$$;

-- _pending_queues: every queue with pending jobs, by skip scans of the claim indexes (one
-- index probe per queue), never by reading the backlog.
create or replace function queue._pending_queues() returns setof text
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    with recursive ungated (queue) as (
        (select j.queue from queue.jobs as j
         where j.status = 'pending' and j.category is null
         order by j.queue limit 1)
        union all
        select (select j.queue from queue.jobs as j
                where j.status = 'pending' and j.category is null and j.queue > u.queue
                order by j.queue limit 1)
        from ungated as u where u.queue is not null
    ),
    gated (queue) as (
        (select j.queue from queue.jobs as j
         where j.status = 'pending' and j.category is not null
         order by j.queue limit 1)
        union all
        select (select j.queue from queue.jobs as j
                where j.status = 'pending' and j.category is not null and j.queue > g.queue
                order by j.queue limit 1)
        from gated as g where g.queue is not null
    )
    select u.queue from ungated as u where u.queue is not null
    union
    select g.queue from gated as g where g.queue is not null
$$;
-- queue.pause: pause a queue (a queue not seen before is created with the default policy).
-- Idempotent. Raises: 22004 null queue; 22023 bad queue name.
create or replace function queue.pause(queue text) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(pause.queue, 'queue');
    perform queue._config(pause.queue);
    update queue.queues as q set paused = true, updated_at = now()
    where q.queue = pause.queue and not q.paused;
end
$$;

-- queue.resume: let a paused queue's jobs be claimed again; wakes the workers listening on
-- andal_jobs (unless the queue's notify is off). Idempotent. Raises: 22004 null queue;
-- 22023 bad queue name.
create or replace function queue.resume(queue text) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_notify boolean;
begin
    perform queue._check_name(resume.queue, 'queue');
    update queue.queues as q set paused = false, updated_at = now()
    where q.queue = resume.queue and q.paused
    returning q.notify into v_notify;
    if v_notify then
        perform queue._notify('andal_jobs', resume.queue);
    end if;
end
$$;

comment on function queue._unpaused_queues(text[], int) is
'Private: the queues a claim may take jobs from while some queue is paused.';
comment on function queue.pause(text) is
'Pause a queue: its jobs are not claimed (running ones finish; enqueue still works).';
comment on function queue.resume(text) is 'Resume a paused queue.';
revoke all on function queue._unpaused_queues(text[], int) from public;
revoke all on function queue._pending_queues() from public;
revoke all on function queue.pause(text) from public;
revoke all on function queue.resume(text) from public;
grant execute on function queue.pause(text) to andal_admin;
grant execute on function queue.resume(text) to andal_admin;
