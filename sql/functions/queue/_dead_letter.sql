-- Dead-lettering: a live job moves to queue.dead_letters. Private: granted to nobody.

-- _out_of_attempts: whether a job whose attempt `attempt` ended without success has no
-- attempt left (it is dead-lettered, reason exhausted, rather than retried). The one home of
-- the rule, for queue.fail and the take-back of expired leases (queue._reap).
create or replace function queue._out_of_attempts(attempt int, max_attempts int)
returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    return attempt >= max_attempts;
end
$$;

-- _bury: move a live job to the dead letters with its error history (`errors`, the job's
-- history with this attempt's entry), and to queue.history when its queue keeps one; tell
-- operators on channel andal_ops and, when the job is watched
-- (queue.watch), its watchers on andal_done. The caller holds the row lock, and settles the
-- job's slot, statistics and cache afterwards (queue._settle). Its times (died_at,
-- finished_at, and keep_until from it) are the clock's at the write. Takes the id,
-- not the row: no function signature depends on queue.jobs's row type. Its state in the
-- history is queue._ended_state of its reason.
drop function if exists queue._bury(queue.jobs, text, text);
create or replace function queue._bury(
    job_id bigint, reason text, last_error text, errors jsonb
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_queue text;
    v_watched boolean;
    -- the time of the write, the clock claims use (never the transaction's start)
    v_now timestamptz := clock_timestamp();
    v_workflow boolean;
    v_has_parents boolean;
begin
    with gone as (
        delete from queue.jobs as j where j.id = _bury.job_id
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.enqueued_at, j.dedup_key, j.cache_key, j.claimed_at, j.worker, j.watched,
            j.workflow, j.has_parents
    ),
    dead as (
        insert into queue.dead_letters as d (
            job_id, queue, category, priority, payload, attempt, max_attempts, enqueued_at,
            died_at, dedup_key, reason, last_error, errors, cache_key
        )
        select g.id, g.queue, g.category, g.priority, g.payload, g.attempt, g.max_attempts,
            g.enqueued_at, v_now, g.dedup_key, _bury.reason, _bury.last_error, _bury.errors,
            g.cache_key
        from gone as g
    ),
    kept as (
        -- the queue keeps history: the finished job goes there too
        insert into queue.history (
            job_id, queue, category, priority, state, payload, attempt, max_attempts,
            enqueued_at, started_at, finished_at, worker, errors, keep_until
        )
        select g.id, g.queue, g.category, g.priority,
            queue._ended_state(_bury.reason), g.payload,
            g.attempt, g.max_attempts, g.enqueued_at, g.claimed_at, v_now, g.worker,
            _bury.errors, v_now + q.history_retention
        from gone as g
        join queue.queues as q on q.queue = g.queue and q.history_retention is not null
    )
    select g.queue, g.watched, g.workflow, g.has_parents
    into v_queue, v_watched, v_workflow, v_has_parents
    from gone as g;
    perform queue._notify('andal_ops',
        json_build_object('event', 'dead', 'job_id', _bury.job_id, 'queue', v_queue,
            'reason', _bury.reason)::text,
        '{"event":"dead"}');
    delete from queue.watches as w where w.job_id = _bury.job_id;  -- queue.watch's row
    if v_watched or found then
        perform queue._notify('andal_done', _bury.job_id::text);
    end if;
    if v_workflow or v_has_parents then  -- children or parents (queue._workflow_ended)
        perform queue._workflow_ended(case when v_workflow then array[_bury.job_id] end,
            case when v_has_parents then array[_bury.job_id] end, _bury.reason);
    end if;
end
$$;
revoke all on function queue._out_of_attempts(int, int) from public;
revoke all on function queue._bury(bigint, text, text, jsonb) from public;
