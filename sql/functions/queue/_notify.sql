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
--
-- The hint on andal_jobs is sent only when it can wake someone (a NOTIFY makes its
-- transaction take a cluster-wide lock at commit, held through the WAL flush: every
-- notifying transaction commits alone, so notifying on every enqueue lost group commit).
-- A listening session says when it sleeps: queue.idle(queues) before it waits, queue.busy()
-- when it wakes (rows of queue.sleepers). A queue's hint is sent when a session sleeps on
-- it (or on every queue), or when no session of the queue uses queue.idle at all (a client
-- that only LISTENs keeps the hint on every change, as before). So a burst of producers
-- while the queue's workers are busy sends none, and a sleeping worker gets about one
-- (until its queue.busy commits). A producer reads queue.sleepers when it makes the job
-- claimable, not at its commit: a job whose transaction was open while the last worker went
-- to sleep (queue.idle, then its re-check claim) is found by that worker's next poll.

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
    if coalesce(enabled, true) and queue._hint_wanted(queue._hint_key(queue_name)) then
        perform queue._notify('andal_jobs', queue_name);
    end if;
end
$$;

-- _hint_key: the key of a queue in queue.sleepers (0 is "every queue", never a queue's).
create or replace function queue._hint_key(queue_name text) returns int
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if queue_name is null then
        return 0;
    end if;
    return coalesce(nullif(hashtext(queue_name), 0), 1);
end
$$;

-- _hint_wanted: whether the hint of the queue of key `key` (queue._hint_key) can wake
-- someone: a session sleeps on the queue or on every queue, or no session of the queue uses
-- queue.idle (a listener that never calls it is hinted on every change). A key shared by two
-- queues only hints more. It takes the key, not the name: a call of queue._hint_key inside
-- its query cost ≈ 15 µs per enqueueing transaction (a PL/pgSQL function evaluated by the
-- executor anew in each transaction), its value as a parameter nothing.
drop function if exists queue._hint_wanted(text);  -- its form before it took the key
create or replace function queue._hint_wanted(key int) returns boolean
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_sleeping boolean;
begin
    select bool_or(s.sleeping) into v_sleeping from queue.sleepers as s
    where s.key = _hint_wanted.key or s.key = 0;
    return coalesce(v_sleeping, true);
end
$$;

-- _sleep: this session's rows of queue.sleepers, for queue.idle and queue.busy. keys null
-- (busy): its rows stop sleeping. Else (idle on keys): its rows of other keys and the rows of
-- ended sessions go, and it sleeps on each key.
create or replace function queue._sleep(keys int []) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if keys is null then
        update queue.sleepers as s set sleeping = false
        where s.pid = pg_backend_pid() and s.sleeping;
        return;
    end if;
    delete from queue.sleepers as s
    where (s.pid = pg_backend_pid() and s.key <> all (_sleep.keys))
        or not exists (select from pg_stat_activity as a where a.pid = s.pid);
    insert into queue.sleepers as s (key, pid, sleeping)
    select distinct k.key, pg_backend_pid(), true from unnest(_sleep.keys) as k (key)
    on conflict (key, pid) do update set sleeping = true where not s.sleeping;
end
$$;

revoke all on function queue._notify(text, text, text) from public;
revoke all on function queue._notify_ready(text, boolean) from public;
revoke all on function queue._hint_key(text) from public;
revoke all on function queue._hint_wanted(int) from public;
revoke all on function queue._sleep(int []) from public;
