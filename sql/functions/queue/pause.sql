-- Pausing a queue: queue.pause and queue.resume.
--
-- A paused queue's jobs are not claimed: every claim (of that queue, of a list naming it, or
-- of every queue) leaves them pending. Jobs already running finish as usual (complete,
-- fail, heartbeat and lease expiry work as before), and enqueue still adds jobs. The flag is
-- the queue's `paused` in queue.queues, shown by queue.stats().

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
        perform pg_notify('andal_jobs', resume.queue);
    end if;
end
$$;

comment on function queue.pause(text) is
'Pause a queue: its jobs are not claimed (running ones finish; enqueue still works).';
comment on function queue.resume(text) is 'Resume a paused queue.';
revoke all on function queue.pause(text) from public;
revoke all on function queue.resume(text) from public;
grant execute on function queue.pause(text) to andal_admin;
grant execute on function queue.resume(text) to andal_admin;
