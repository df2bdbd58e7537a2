-- queue.complete: finish a claimed job. The job leaves the live table in the caller's
-- transaction; it is kept in queue.history (with its result) when the queue keeps history;
-- a NOTIFY andal_done (payload: the job id) goes out when someone watches it (queue.watch);
-- its result is kept in queue.results only when the queue's keep_results is on;
-- its gate slot is freed; its cache key is invalidated (or rewritten with the result, by the
-- queue's cache_policy) in the same transaction.
-- The lease is checked on the database's current time (queue._lease_clock): a transaction
-- begun before the lease expired cannot complete the job after it. complete and
-- complete_many count their statistics in the statement that deletes the jobs (their hot
-- path: queue._hist_bounds' buckets) and leave the other side effects (the slot, the cache)
-- to the funnel, queue._settle_many.
-- Raises: 22004 null job_id or token; 25006 in a read-only transaction; 54000 a result to
-- keep (results or history) over queue.config.max_result_bytes (complete it without a result, or fail it); AN001 (lease
-- lost) when the token is not the job's current, unexpired lease, or an abort of the job was
-- requested (queue.cancel: the abort wins; end the attempt with queue.fail) — nothing is
-- changed then.
-- Cost: one statement deletes the job and reads the queue's policy, one updates this
-- backend's statistics row of the minute (queue._record's row; an upsert once a minute); a
-- gated job's slot, a kept result and a cache key take one more statement each.
create or replace function queue.complete(job_id bigint, token uuid, result jsonb default null)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
-- by primary key whatever the (possibly stale) statistics say, as complete_many
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_job record;
    v_now timestamptz := queue._lease_clock();
begin
    if complete.job_id is null or complete.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.complete');
    end if;
    -- By primary key, never a scan of the running jobs (as complete_many): a token is set
    -- only while a job runs, so token and unexpired lease say "running" without naming the
    -- status, which would let the planner read jobs_lease_idx on stale statistics.
    with gone as (
        delete from queue.jobs as j
        where j.id = complete.job_id and j.token = complete.token
          and j.lease_expires_at > v_now and j.abort_requested_at is null
        returning j.id, j.queue, j.category, j.cache_key, j.priority, j.payload, j.attempt,
            j.max_attempts, j.enqueued_at, j.claimed_at, j.worker, j.errors, j.watched,
            j.workflow, j.has_parents, j.only_child,
            date_part('epoch', v_now - j.claimed_at) * 1000 as run_ms,
            width_bucket(date_part('epoch', v_now - j.claimed_at) * 1000,
                queue._hist_bounds())
            + 1 as rb,
            width_bucket(date_part('epoch', j.claimed_at - j.available_at) * 1000,
                queue._hist_bounds())
            + 1 as wb
    )
    select g.*, q.keep_results, q.history_retention into v_job
    from gone as g
    left join queue.queues as q on q.queue = g.queue;
    if v_job.id is null then
        perform queue._lease_lost(complete.job_id, complete.token);
    end if;
    -- Counted in this backend's row of the minute, queue and category: an update by primary
    -- key (a HOT update, one WAL record) and queue._count_completed's upsert only when the
    -- row does not exist yet (once a minute). Its call every time cost ≈ 10 µs, 5 % of a
    -- claim + complete at batch 1; the job's buckets get a 1 (queue._hist_bounds).
    update queue.stat_minutes as s
    set completed = s.completed + 1, run_count = s.run_count + 1,
        run_ms = s.run_ms + v_job.run_ms, run_hist[v_job.rb] = s.run_hist[v_job.rb] + 1,
        wait_hist[v_job.wb] = s.wait_hist[v_job.wb] + 1
    where s.minute = date_trunc('minute', now()) and s.backend = pg_backend_pid()
      and s.queue = v_job.queue and s.category = coalesce(v_job.category, '');
    if not found then
        perform queue._count_completed(array[v_job.queue], array[v_job.category],
            array[v_job.run_ms], array[v_job.rb], array[v_job.wb]);
    end if;
    if v_job.history_retention is not null then  -- the object of complete_many's history aggregate
        perform queue._history_completed(jsonb_build_array(jsonb_build_object(
            'job_id', v_job.id, 'queue', v_job.queue, 'category', v_job.category,
            'priority', v_job.priority, 'payload', v_job.payload, 'attempt', v_job.attempt,
            'max_attempts', v_job.max_attempts, 'enqueued_at', v_job.enqueued_at,
            'started_at', v_job.claimed_at, 'worker', v_job.worker,
            'result', queue._check_result(complete.result, 'result'), 'errors', v_job.errors)),
            v_now);
    end if;
    perform queue._record_completions(array[v_job.id], array[v_job.queue],
        int8range(v_job.id, v_job.id, '[]'), v_now);
    delete from queue.watches as w where w.job_id = v_job.id;  -- queue.watch's row
    if v_job.watched or found then
        perform queue._notify('andal_done', v_job.id::text);
    end if;
    if v_job.keep_results then
        insert into queue.results (job_id, queue, result, completed_at)
        values (v_job.id, v_job.queue, queue._check_result(complete.result, 'result'), v_now);
    end if;
    if v_job.category is not null or v_job.cache_key is not null then  -- the slot, the cache
        perform queue._settle_many(array[v_job.id], array['completed'], array[v_job.queue],
            array[v_job.category], cache_keys => array[v_job.cache_key],
            results => array[complete.result], counted => true);
    end if;
    if v_job.workflow or v_job.has_parents then  -- children or parents (_workflow_ended)
        perform queue._workflow_ended(case when v_job.workflow then array[v_job.id] end,
            case when v_job.has_parents then array[v_job.id] end, 'completed',
            array[complete.result], array[v_job.only_child]);
    end if;
end
$$;

-- _complete_one: queue.complete with queue.complete_many's outcome, for complete_many given
-- one job (and so complete_many_then_claim): true when completed; false when the lease was lost
-- or an abort was requested (nothing changed: complete refuses before it writes, and this
-- block's subtransaction is all it costs). A result over the limit is refused as complete_many
-- names it (results[1]).
create or replace function queue._complete_one(job_id bigint, token uuid, result jsonb)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    perform queue.complete(job_id => _complete_one.job_id, token => _complete_one.token,
        result => _complete_one.result);
    return true;
exception
    when sqlstate 'AN001' then
        return false;
    when sqlstate '54000' then
        perform queue._check_result(_complete_one.result, 'results[1]');
        raise;
end
$$;

-- queue.complete_many: complete several claimed jobs at once. Never raises for a lost lease:
-- returns one row per input job with completed = false where the lease was lost or an abort
-- was requested (that job is left untouched). The delete takes its row locks in id order
-- (no separate lock pass), so concurrent batches never deadlock.
-- Completed jobs of queues that keep history go to queue.history; each watched job gets its
-- NOTIFY andal_done, as with complete.
-- Raises: 22004 null arrays; 22023 arrays of different lengths; 25006 in a read-only
-- transaction.
-- Cost: one statement deletes the jobs (one primary-key probe each) and keeps their results
-- (queue._complete_delete); one upsert per queue and category of the batch counts them; a
-- gated batch's slots take one more, each cache key one call; one more builds the answer.
create or replace function queue.complete_many(
    job_ids bigint[], tokens uuid[], results jsonb[] default null
) returns table (job_id bigint, completed boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_done record;  -- the completed jobs (queue._complete_delete)
    v_watched bigint[];
    v_now timestamptz := queue._lease_clock();
begin
    if complete_many.job_ids is null or complete_many.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.complete_many');
    end if;
    if cardinality(complete_many.job_ids) <> cardinality(complete_many.tokens)
        or (complete_many.results is not null
            and cardinality(complete_many.results) <> cardinality(complete_many.job_ids)) then
        raise exception 'job_ids, tokens and results must have the same length'
            using errcode = '22023';
    end if;

    -- One job (a worker at batch 1): queue.complete's direct path (queue._complete_one);
    -- the set-based statement below costs about five times as much for a single row.
    if cardinality(complete_many.job_ids) = 1 and complete_many.job_ids[1] is not null
        and complete_many.tokens[1] is not null then
        return query select complete_many.job_ids[1], queue._complete_one(
            complete_many.job_ids[1], complete_many.tokens[1], complete_many.results[1]);
        return;
    end if;

    v_done := queue._complete_delete(complete_many.job_ids, complete_many.tokens,
        complete_many.results, v_now);
    if v_done.ids is not null then
        if v_done.settle then  -- the slots, the cache (the statistics are counted here)
            perform queue._settle_many(v_done.ids,
                array_fill('completed'::text, array[cardinality(v_done.ids)]), v_done.queues,
                v_done.categories, cache_keys => v_done.cache_keys, results => v_done.results,
                counted => true);
        end if;
        perform queue._count_completed(v_done.queues, v_done.categories, v_done.run_ms,
            v_done.run_buckets, v_done.wait_buckets);
        perform queue._record_completions(v_done.ids, v_done.queues, v_done.span, v_now);
    end if;
    if v_done.history is not null then
        perform queue._history_completed(v_done.history, v_now);
    end if;
    with w as (
        delete from queue.watches as w where w.job_id = any (v_done.ids) returning w.job_id
    )
    select v_done.watched || array_agg(w.job_id) from w into v_watched;  -- queue.watch's rows
    for v_i in 1 .. coalesce(cardinality(v_watched), 0) loop
        perform queue._notify('andal_done', v_watched[v_i]::text);
    end loop;
    if v_done.flow is not null or v_done.flow_children is not null then  -- (_workflow_ended)
        perform queue._workflow_ended(v_done.flow, v_done.flow_children, 'completed',
            v_done.flow_results, v_done.flow_only);
    end if;

    -- One row per input pair, in input order. A pair with a null id or token matches
    -- nothing: null, or false when no job was completed.
    return query
    select i.id,
        case when i.id is not null and i.tok is not null then d.id is not null
             when v_done.ids is null then false end
    from unnest(complete_many.job_ids, complete_many.tokens) with ordinality as i (id, tok, n)
    left join unnest(v_done.ids, v_done.toks) as d (id, tok) on d.id = i.id and d.tok = i.tok
    order by i.n;
end
$$;

-- _complete_delete: complete_many's deleting statement (private): the jobs of the (job_ids,
-- tokens) pairs whose lease is current at `now` and whose abort was not requested leave
-- queue.jobs, the results of those of queues that keep results go to queue.results, and
-- what the side effects need of the completed jobs comes back as arrays (job i: ids[i],
-- toks[i], queues[i], ...; results[i] its result; run_ms, run_buckets and wait_buckets for
-- queue._count_completed; span: the lowest and highest id; settle: whether one has a category
-- or a cache key; history: the objects queue._history_completed keeps, of the queues that
-- keep history; watched, flow, flow_results, flow_children, flow_only: the jobs someone
-- watches, with children (and their results, each parent's only child) and with parents).
-- One statement, no separate lock pass: a nested loop over the sorted input probes the
-- primary key once per pair (the planner settings below hold for this function only), so
-- the delete takes its row locks in id order, the order heartbeat_many locks in: concurrent
-- batches never deadlock. Never a scan of the running jobs: a token is set only while a job
-- runs, so token and unexpired lease say "running" without naming the status (which would
-- let the planner pick jobs_lease_idx on stale statistics). A job has one token, so it
-- matches at most one pair; a pair given twice counts once (with its first result).
create or replace function queue._complete_delete(
    job_ids bigint [], tokens uuid [], results_in jsonb [], now timestamptz,
    out ids bigint [], out toks uuid [], out queues text [], out categories text [],
    out run_ms double precision [], out run_buckets int [], out wait_buckets int [],
    out span int8range, out settle boolean, out cache_keys text [], out results jsonb [],
    out history jsonb, out watched bigint [], out flow bigint [], out flow_results jsonb [],
    out flow_children bigint [], out flow_only bigint []
)
language plpgsql
set search_path = pg_catalog, pg_temp
-- every row by primary key whatever the (possibly stale) statistics say, the delete a nested
-- loop driven by the sorted input (its lock order), and no JIT compilation, which a plan
-- costed with a disabled scan would trigger on every call
set enable_seqscan = off
set enable_bitmapscan = off
set enable_hashjoin = off
set enable_mergejoin = off
set jit = off
as $$
#variable_conflict use_column
begin
    with input as materialized (
        select distinct on (i.id, i.tok) i.id, i.tok, i.n
        from unnest(_complete_delete.job_ids, _complete_delete.tokens) with ordinality
            as i (id, tok, n)
        order by i.id, i.tok, i.n
    ),
    gone as (
        delete from queue.jobs as j using input as i
        where j.id = i.id and j.token = i.tok
          and j.lease_expires_at > _complete_delete.now and j.abort_requested_at is null
        returning j.id, j.token, j.queue, j.category, j.cache_key, i.n, j.priority, j.payload,
            j.attempt, j.max_attempts, j.enqueued_at, j.claimed_at, j.worker, j.errors,
            j.watched, j.workflow, j.has_parents, j.only_child,
            _complete_delete.results_in[i.n] as result,
            date_part('epoch', _complete_delete.now - j.claimed_at) * 1000 as run_ms,
            width_bucket(date_part('epoch', _complete_delete.now - j.claimed_at) * 1000,
                queue._hist_bounds())
            + 1 as rb,
            width_bucket(date_part('epoch', j.claimed_at - j.available_at) * 1000,
                queue._hist_bounds())
            + 1 as wb
    ),
    kept as (
        -- the queues that keep results are read once (usually none), not once per job; in
        -- key order, so on an index
        insert into queue.results (job_id, queue, result, completed_at)
        select g.id, g.queue, queue._check_result(g.result, format('results[%s]', g.n)),
            _complete_delete.now
        from gone as g
        where g.queue = any (array(
            select q.queue from queue.queues as q where q.keep_results order by q.queue))
    )
    select array_agg(g.id), array_agg(g.token), array_agg(g.queue), array_agg(g.category),
        array_agg(g.run_ms), array_agg(g.rb), array_agg(g.wb),
        int8range(min(g.id), max(g.id), '[]'),
        bool_or(g.category is not null or g.cache_key is not null), array_agg(g.cache_key),
        array_agg(g.result),
        -- (usually none: the queues that keep history are read once)
        jsonb_agg(jsonb_build_object(
            'job_id', g.id, 'queue', g.queue, 'category', g.category, 'priority', g.priority,
            'payload', g.payload, 'attempt', g.attempt, 'max_attempts', g.max_attempts,
            'enqueued_at', g.enqueued_at, 'started_at', g.claimed_at, 'worker', g.worker,
            'result', queue._check_result(g.result, format('results[%s]', g.n)),
            'errors', g.errors))
        filter (where g.queue = any (array(
            select q.queue from queue.queues as q where q.history_retention is not null
            order by q.queue))),
        array_agg(g.id) filter (where g.watched), array_agg(g.id) filter (where g.workflow),
        array_agg(g.result) filter (where g.workflow),
        array_agg(g.id) filter (where g.has_parents),
        array_agg(g.only_child) filter (where g.workflow)
    into ids, toks, queues, categories, run_ms, run_buckets, wait_buckets, span, settle,
        cache_keys, results, history, watched, flow, flow_results, flow_children, flow_only
    from gone as g;
end
$$;

-- queue.complete_many_outcomes: queue.complete_many, with the reason of each refusal: one
-- row per input pair, in input order, refused null where the job was completed, else the
-- word of queue.refusals (aborted: end the attempt with queue.fail, the job ends cancelled;
-- any other: discard the outcome). The reasons are read after the completions, in the same
-- statement, so they say why those jobs were not completed.
-- Raises: what queue.complete_many raises.
create or replace function queue.complete_many_outcomes(
    job_ids bigint [], tokens uuid [], results jsonb [] default null
) returns table (job_id bigint, completed boolean, refused text)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select c.job_id, c.completed,
        case when not c.completed then queue._refusal(c.job_id, t.tok) end
    from queue.complete_many(job_ids => complete_many_outcomes.job_ids,
        tokens => complete_many_outcomes.tokens, results => complete_many_outcomes.results)
        with ordinality as c (job_id, completed, n)
    join unnest(complete_many_outcomes.tokens) with ordinality as t (tok, n) on t.n = c.n
    order by c.n;
end
$$;

comment on function queue.complete(bigint, uuid, jsonb) is
'Finish a claimed job (fenced by its token); the job leaves the live table.';
comment on function queue.complete_many(bigint[], uuid[], jsonb[]) is
'Complete several claimed jobs; returns completed = false where the lease was lost.';
revoke all on function queue.complete(bigint, uuid, jsonb) from public;
revoke all on function queue.complete_many(bigint[], uuid[], jsonb[]) from public;
revoke all on function queue._complete_one(bigint, uuid, jsonb) from public;
revoke all on function queue._complete_delete(bigint [], uuid [], jsonb [], timestamptz)
from public;
comment on function queue.complete_many_outcomes(bigint [], uuid [], jsonb []) is
'Complete several claimed jobs; returns why each one not completed was refused.';
revoke all on function queue.complete_many_outcomes(bigint [], uuid [], jsonb []) from public;
grant execute on function queue.complete_many_outcomes(bigint [], uuid [], jsonb [])
to andal_worker, andal_admin;
grant execute on function queue.complete(bigint, uuid, jsonb) to andal_worker, andal_admin;
grant execute on function queue.complete_many(bigint[], uuid[], jsonb[])
to andal_worker, andal_admin;
