-- Pausing a queue: queue.pause and queue.resume, and the claim's private helper
-- queue._unpaused_queues.
--
-- A paused queue's jobs are not claimed: every claim (of that queue, of a list naming it, or
-- of every queue) leaves them pending. Jobs already running finish as usual (complete,
-- fail, heartbeat and lease expiry work as before), and enqueue still adds jobs. The flag is
-- the queue's `paused` in queue.queues, shown by queue.stats().

-- _unpaused_queues: the queues a claim of `queues` may take jobs from while some queue is
-- paused: the listed ones that are not paused, or (queues null) every queue with pending
-- jobs that is not paused. The queues with pending jobs are enumerated by skip scans of the
-- claim indexes (one index probe per queue), never by reading the backlog.
create or replace function queue._unpaused_queues(queues text[]) returns text []
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
    ),
    candidates (queue) as (
        select q.name from unnest(queues) as q (name) where queues is not null
        union
        select u.queue from ungated as u where queues is null and u.queue is not null
        union
        select g.queue from gated as g where queues is null and g.queue is not null
    )
    select coalesce(array_agg(c.queue order by c.queue), '{}')
    from candidates as c
    where not exists (select from queue.queues as p where p.paused and p.queue = c.queue)
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

comment on function queue._unpaused_queues(text[]) is
'Private: the queues a claim may take jobs from while some queue is paused.';
comment on function queue.pause(text) is
'Pause a queue: its jobs are not claimed (running ones finish; enqueue still works).';
comment on function queue.resume(text) is 'Resume a paused queue.';
revoke all on function queue._unpaused_queues(text[]) from public;
revoke all on function queue.pause(text) from public;
revoke all on function queue.resume(text) from public;
grant execute on function queue.pause(text) to andal_admin;
grant execute on function queue.resume(text) to andal_admin;
