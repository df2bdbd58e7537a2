-- Notifications: the one place andal.notify_names is read, and the hint that jobs of a
-- queue are claimable. Private: granted to nobody.
--
-- Channels: andal_jobs (payload: the queue) when jobs became claimable now: enqueue,
-- enqueue_many, a failed attempt retried at once, release, requeue of a dead letter, the
-- take-back of an expired lease; andal_done (the job id) when a watched job ends;
-- andal_ops ({"event": "dead", ...}) when a job is dead-lettered; andal_abort
-- ({"job_id", "worker"}) when an abort of a running job is requested. PostgreSQL delivers
-- equal notifications of one transaction once, so a statement that makes many jobs of one
-- queue claimable sends one hint. Listeners treat every notification as a hint to re-read.

-- _notify: pg_notify(channel, payload), or with `anonymous` instead of the payload on a
-- locked-down install (andal.notify_names = off, see queue._lock_down): no names then.
create or replace function queue._notify(channel text, payload text, anonymous text default '')
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    perform pg_notify(channel,
        case when coalesce(current_setting('andal.notify_names', true), '') <> 'off'
            then payload else anonymous end);
end
$$;

-- _notify_ready: the hint on andal_jobs that jobs of queue_name are claimable now, unless the
-- queue's policy turned notifications off. `enabled`: the queue's notify setting when the
-- caller has read it; null: read here (a queue without a policy row notifies).
create or replace function queue._notify_ready(queue_name text, enabled boolean default null)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if enabled is null then
        select q.notify into enabled from queue.queues as q where q.queue = queue_name;
    end if;
    if coalesce(enabled, true) then
        perform queue._notify('andal_jobs', queue_name);
    end if;
end
$$;

revoke all on function queue._notify(text, text, text) from public;
revoke all on function queue._notify_ready(text, boolean) from public;
