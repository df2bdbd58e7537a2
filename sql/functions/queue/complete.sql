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
    v_id bigint;
    v_queue text;
    v_category text;
    v_cache_key text;
    v_keep boolean;
    v_history interval;
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
    v_id := v_job.id;
    v_queue := v_job.queue;
    v_category := v_job.category;
    v_cache_key := v_job.cache_key;
    v_keep := v_job.keep_results;
    v_history := v_job.history_retention;
    if v_id is null then
        perform queue._lease_lost(complete.job_id, complete.token);
    end if;
    -- Counted in this backend's row for this minute, queue and category (queue._record's
    -- row): a plain update by primary key (a HOT update, one WAL record), and an upsert only
    -- when the row does not exist yet (once a minute). An upsert every time ran the
    -- speculative-insertion check and wrote a row-lock record before its update: ≈ 15 µs of
    -- server CPU more per job. The histograms get a 1 in the job's bucket (16 buckets, see
    -- queue._hist_bounds).
    update queue.stat_minutes as s
    set completed = s.completed + 1, run_count = s.run_count + 1,
        run_ms = s.run_ms + v_job.run_ms,
        run_hist[v_job.rb] = s.run_hist[v_job.rb] + 1,
        wait_hist[v_job.wb] = s.wait_hist[v_job.wb] + 1
    where s.minute = date_trunc('minute', now()) and s.backend = pg_backend_pid()
      and s.queue = v_queue and s.category = coalesce(v_category, '');
    if not found then
        insert into queue.stat_minutes as s (
            minute, backend, queue, category, completed, run_count, run_ms, run_hist, wait_hist
        )
        select date_trunc('minute', now()), pg_backend_pid(), v_queue, coalesce(v_category, ''),
            1, 1, v_job.run_ms,
            array_fill(0::bigint, array[v_job.rb - 1]) || 1::bigint
            || array_fill(0::bigint, array[16 - v_job.rb]),
            array_fill(0::bigint, array[v_job.wb - 1]) || 1::bigint
            || array_fill(0::bigint, array[16 - v_job.wb])
        on conflict (minute, backend, queue, category) do update
        set completed = s.completed + 1, run_count = s.run_count + 1,
            run_ms = s.run_ms + excluded.run_ms,
            run_hist[v_job.rb] = s.run_hist[v_job.rb] + 1,
            wait_hist[v_job.wb] = s.wait_hist[v_job.wb] + 1;
    end if;
    if v_history is not null then
        insert into queue.history (
            job_id, queue, category, priority, state, payload, attempt, max_attempts,
            enqueued_at, started_at, finished_at, worker, result, errors, keep_until
        ) values (
            v_id, v_queue, v_category, v_job.priority, 'completed', v_job.payload,
            v_job.attempt, v_job.max_attempts, v_job.enqueued_at,
            v_job.claimed_at, v_now, v_job.worker,
            queue._check_result(complete.result, 'result'), v_job.errors, v_now + v_history
        );
    end if;
    perform queue._record_completions(array[v_id], array[v_queue], int8range(v_id, v_id, '[]'),
        v_now);
    delete from queue.watches as w where w.job_id = v_id;  -- queue.watch's row
    if v_job.watched or found then
        perform queue._notify('andal_done', v_id::text);
    end if;
    if v_keep then
        insert into queue.results (job_id, queue, result, completed_at)
        values (v_id, v_queue, queue._check_result(complete.result, 'result'), v_now);
    end if;
    if v_category is not null or v_cache_key is not null then  -- the slot, the cache
        perform queue._settle_many(array[v_id], array['completed'], array[v_queue],
            array[v_category], cache_keys => array[v_cache_key],
            results => array[complete.result], counted => true);
    end if;
    if v_job.workflow or v_job.has_parents then  -- children or parents (_workflow_ended)
        perform queue._workflow_ended(case when v_job.workflow then array[v_id] end,
            case when v_job.has_parents then array[v_id] end, 'completed',
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
-- Cost: one statement deletes the jobs (one primary-key probe each), frees their gate slots,
-- keeps their results and counts them in the statistics (one upsert per queue and category
-- of the batch); one more builds the answer; each cache key takes one call.
create or replace function queue.complete_many(
    job_ids bigint[], tokens uuid[], results jsonb[] default null
) returns table (job_id bigint, completed boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
-- every row is found by primary key, whatever the (possibly stale) statistics say; the delete
-- is a nested loop driven by the sorted input (its lock order; hash joins come back after
-- it); and no JIT compilation, which a plan costed with a disabled scan would trigger on
-- every call
set enable_seqscan = off
set enable_bitmapscan = off
set enable_hashjoin = off
set enable_mergejoin = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_ids bigint[];  -- the completed (job, token) pairs, and their queues
    v_toks uuid[];
    v_queues text[];
    v_span int8range;
    v_fx bigint[];  -- the completed jobs with a category or a cache key (queue._settle_many)
    v_fx_queues text[];
    v_fx_cats text[];
    v_fx_keys text[];
    v_fx_results jsonb[];
    v_history jsonb;  -- the completed jobs of queues that keep history
    v_watched bigint[];  -- the completed jobs someone watches
    v_flow bigint[];  -- the completed jobs with children, and their results
    v_flow_results jsonb[];
    v_flow_children bigint[];  -- the completed jobs with parents
    v_flow_only bigint[];  -- each parent's only child (null: several, read from its edges)
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

    with input as materialized (
        -- a (job, token) pair given twice counts once (with its first result: n); sorted by
        -- id, and materialized so that it drives the delete in that order
        select distinct on (i.id, i.tok) i.id, i.tok, i.n
        from unnest(complete_many.job_ids, complete_many.tokens) with ordinality as i (id, tok, n)
        order by i.id, i.tok, i.n
    ),
    gone as (
        -- One statement, no separate lock pass: a nested loop over the sorted input probes
        -- the primary key once per pair (hash and merge joins are off for it: see the SET), so
        -- the delete takes its row locks in id order, the order heartbeat_many locks in:
        -- concurrent batches never deadlock. Never a scan of the running jobs: a token is
        -- set only while a job runs, so token and unexpired lease say "running" without
        -- naming the status (which would let the planner pick jobs_lease_idx on stale
        -- statistics). A job has one token, so it matches at most one pair.
        delete from queue.jobs as j using input as i
        where j.id = i.id and j.token = i.tok
          and j.lease_expires_at > v_now and j.abort_requested_at is null
        returning j.id, j.token, j.queue, j.category, j.cache_key, i.n, j.priority, j.payload,
            j.attempt, j.max_attempts, j.enqueued_at, j.claimed_at, j.worker, j.errors,
            j.watched, j.workflow, j.has_parents, j.only_child,
            date_part('epoch', v_now - j.claimed_at) * 1000 as run_ms,
            width_bucket(date_part('epoch', v_now - j.claimed_at) * 1000,
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
        select g.id, g.queue,
            queue._check_result(complete_many.results[g.n], format('results[%s]', g.n)), v_now
        from gone as g
        where g.queue = any (array(
            select q.queue from queue.queues as q where q.keep_results order by q.queue))
    ),
    counted as (
        -- queue._record's upsert, once per queue and category of the batch: this backend's
        -- row of the minute, with the batch's histograms (16 buckets, see queue._hist_bounds).
        -- A deliberate copy of queue._hist and queue._hist_add, written out as 16 counts: a
        -- batch of gated jobs is a group per category, and a call per group cost a fifth of
        -- a gated claim + complete_many's server CPU (bench.cpu_ab --gated);
        -- sql/tests/queue/complete_many/histograms_agree.sql proves both forms agree.
        insert into queue.stat_minutes as s (
            minute, backend, queue, category, completed, run_count, run_ms, run_hist, wait_hist
        )
        select date_trunc('minute', now()), pg_backend_pid(), g.queue, coalesce(g.category, ''),
            count(*), count(*), sum(g.run_ms),
            array[
                count(*) filter (where g.rb = 1), count(*) filter (where g.rb = 2),
                count(*) filter (where g.rb = 3), count(*) filter (where g.rb = 4),
                count(*) filter (where g.rb = 5), count(*) filter (where g.rb = 6),
                count(*) filter (where g.rb = 7), count(*) filter (where g.rb = 8),
                count(*) filter (where g.rb = 9), count(*) filter (where g.rb = 10),
                count(*) filter (where g.rb = 11), count(*) filter (where g.rb = 12),
                count(*) filter (where g.rb = 13), count(*) filter (where g.rb = 14),
                count(*) filter (where g.rb = 15), count(*) filter (where g.rb = 16)],
            array[
                count(*) filter (where g.wb = 1), count(*) filter (where g.wb = 2),
                count(*) filter (where g.wb = 3), count(*) filter (where g.wb = 4),
                count(*) filter (where g.wb = 5), count(*) filter (where g.wb = 6),
                count(*) filter (where g.wb = 7), count(*) filter (where g.wb = 8),
                count(*) filter (where g.wb = 9), count(*) filter (where g.wb = 10),
                count(*) filter (where g.wb = 11), count(*) filter (where g.wb = 12),
                count(*) filter (where g.wb = 13), count(*) filter (where g.wb = 14),
                count(*) filter (where g.wb = 15), count(*) filter (where g.wb = 16)]
        from gone as g
        group by g.queue, coalesce(g.category, '')
        on conflict (minute, backend, queue, category) do update
        set completed = s.completed + excluded.completed,
            run_count = s.run_count + excluded.run_count,
            run_ms = s.run_ms + excluded.run_ms,
            run_hist = array[
                s.run_hist[1] + excluded.run_hist[1], s.run_hist[2] + excluded.run_hist[2],
                s.run_hist[3] + excluded.run_hist[3], s.run_hist[4] + excluded.run_hist[4],
                s.run_hist[5] + excluded.run_hist[5], s.run_hist[6] + excluded.run_hist[6],
                s.run_hist[7] + excluded.run_hist[7], s.run_hist[8] + excluded.run_hist[8],
                s.run_hist[9] + excluded.run_hist[9], s.run_hist[10] + excluded.run_hist[10],
                s.run_hist[11] + excluded.run_hist[11], s.run_hist[12] + excluded.run_hist[12],
                s.run_hist[13] + excluded.run_hist[13], s.run_hist[14] + excluded.run_hist[14],
                s.run_hist[15] + excluded.run_hist[15], s.run_hist[16] + excluded.run_hist[16]],
            wait_hist = array[
                s.wait_hist[1] + excluded.wait_hist[1], s.wait_hist[2] + excluded.wait_hist[2],
                s.wait_hist[3] + excluded.wait_hist[3], s.wait_hist[4] + excluded.wait_hist[4],
                s.wait_hist[5] + excluded.wait_hist[5], s.wait_hist[6] + excluded.wait_hist[6],
                s.wait_hist[7] + excluded.wait_hist[7], s.wait_hist[8] + excluded.wait_hist[8],
                s.wait_hist[9] + excluded.wait_hist[9], s.wait_hist[10] + excluded.wait_hist[10],
                s.wait_hist[11] + excluded.wait_hist[11], s.wait_hist[12] + excluded.wait_hist[12],
                s.wait_hist[13] + excluded.wait_hist[13], s.wait_hist[14] + excluded.wait_hist[14],
                s.wait_hist[15] + excluded.wait_hist[15], s.wait_hist[16] + excluded.wait_hist[16]]
    )
    select array_agg(g.id), array_agg(g.token), array_agg(g.queue),
        int8range(min(g.id), max(g.id), '[]'),
        array_agg(g.id) filter (where g.category is not null or g.cache_key is not null),
        array_agg(g.queue) filter (where g.category is not null or g.cache_key is not null),
        array_agg(g.category) filter (where g.category is not null or g.cache_key is not null),
        array_agg(g.cache_key) filter (where g.category is not null or g.cache_key is not null),
        array_agg(complete_many.results[g.n])
        filter (where g.category is not null or g.cache_key is not null),
        -- (usually none: the queues that keep history are read once)
        jsonb_agg(jsonb_build_object(
            'job_id', g.id, 'queue', g.queue, 'category', g.category, 'priority', g.priority,
            'payload', g.payload, 'attempt', g.attempt, 'max_attempts', g.max_attempts,
            'enqueued_at', g.enqueued_at, 'started_at', g.claimed_at, 'worker', g.worker,
            'result', queue._check_result(complete_many.results[g.n], format('results[%s]', g.n)),
            'errors', g.errors))
        filter (where g.queue = any (array(
            select q.queue from queue.queues as q where q.history_retention is not null
            order by q.queue))),
        array_agg(g.id) filter (where g.watched),
        array_agg(g.id) filter (where g.workflow),
        array_agg(complete_many.results[g.n]) filter (where g.workflow),
        array_agg(g.id) filter (where g.has_parents),
        array_agg(g.only_child) filter (where g.workflow)
    into v_ids, v_toks, v_queues, v_span, v_fx, v_fx_queues, v_fx_cats, v_fx_keys, v_fx_results,
        v_history, v_watched, v_flow, v_flow_results, v_flow_children, v_flow_only
    from gone as g;

    -- Hash joins were off for the delete only: the statements below (the slots' release,
    -- the answer's join of the input with the completed pairs) have them back until this
    -- function returns; left off, the answer was a 100 x 100 nested loop at batch 100.
    perform set_config('enable_hashjoin', 'on', true);

    if v_fx is not null then  -- the slots, the cache (the statistics are counted above)
        perform queue._settle_many(v_fx, array_fill('completed'::text, array[cardinality(v_fx)]),
            v_fx_queues, v_fx_cats, cache_keys => v_fx_keys, results => v_fx_results,
            counted => true);
    end if;

    if v_ids is not null then
        perform queue._record_completions(v_ids, v_queues, v_span, v_now);
    end if;
    if v_history is not null then
        insert into queue.history (
            job_id, queue, category, priority, state, payload, attempt, max_attempts,
            enqueued_at, started_at, finished_at, worker, result, errors, keep_until
        )
        select h.job_id, h.queue, h.category, h.priority, 'completed', h.payload, h.attempt,
            h.max_attempts, h.enqueued_at, h.started_at, v_now, h.worker, h.result, h.errors,
            v_now + queue._history_keep(h.queue)
        from jsonb_to_recordset(v_history) as h (
            job_id bigint, queue text, category text, priority int, payload jsonb,
            attempt int, max_attempts int, enqueued_at timestamptz, started_at timestamptz,
            worker text, result jsonb, errors jsonb
        );
    end if;
    with w as (delete from queue.watches as w where w.job_id = any (v_ids) returning w.job_id)
    select v_watched || array_agg(w.job_id) from w into v_watched;  -- queue.watch's rows
    for v_i in 1 .. coalesce(cardinality(v_watched), 0) loop
        perform queue._notify('andal_done', v_watched[v_i]::text);
    end loop;

    if v_flow is not null or v_flow_children is not null then  -- (queue._workflow_ended)
        perform queue._workflow_ended(v_flow, v_flow_children, 'completed', v_flow_results,
            v_flow_only);
    end if;

    -- One row per input pair, in input order. A pair with a null id or token matches
    -- nothing: null, or false when no job was completed.
    return query
    select i.id,
        case when i.id is not null and i.tok is not null then d.id is not null
             when v_ids is null then false end
    from unnest(complete_many.job_ids, complete_many.tokens) with ordinality as i (id, tok, n)
    left join unnest(v_ids, v_toks) as d (id, tok) on d.id = i.id and d.tok = i.tok
    order by i.n;
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
comment on function queue.complete_many_outcomes(bigint [], uuid [], jsonb []) is
'Complete several claimed jobs; returns why each one not completed was refused.';
revoke all on function queue.complete_many_outcomes(bigint [], uuid [], jsonb []) from public;
grant execute on function queue.complete_many_outcomes(bigint [], uuid [], jsonb [])
to andal_worker, andal_admin;
grant execute on function queue.complete(bigint, uuid, jsonb) to andal_worker, andal_admin;
grant execute on function queue.complete_many(bigint[], uuid[], jsonb[])
to andal_worker, andal_admin;
