-- queue.complete: finish a claimed job. The job leaves the live table in the caller's
-- transaction; its result is kept in queue.results only when the queue's keep_results is on;
-- its gate slot is freed; its cache key is invalidated (or rewritten with the result, by the
-- queue's cache_policy) in the same transaction (C8, C10).
-- Raises: 22004 null job_id or token; AN001 (lease lost) when the token is not the job's
-- current, unexpired lease — nothing is changed then.
create or replace function queue.complete(job_id bigint, token uuid, result jsonb default null)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    c_bounds constant double precision[] :=
        '{1,2,5,10,25,50,100,250,500,1000,2500,5000,10000,30000,60000}'::double precision[];
    v_job queue.jobs;
    v_cfg queue.queues;
    v_run_ms double precision;
    v_rb int;
    v_wb int;
    v_rh bigint[] := '{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}'::bigint[];
    v_wh bigint[] := '{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}'::bigint[];
begin
    if complete.job_id is null or complete.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    delete from queue.jobs as j
    where j.id = complete.job_id and j.status = 'running' and j.token = complete.token
      and j.lease_expires_at > now()
    returning j.* into v_job;
    if v_job.id is null then
        perform queue._lease_lost(complete.job_id, complete.token);
    end if;
    if v_job.category is not null then
        delete from queue.worker_locks as w where w.job_id = v_job.id;
    end if;
    -- Statistics (queue._record, inlined for the hot path): one upsert of this backend's
    -- row for this minute, queue and category.
    v_run_ms := date_part('epoch', now() - v_job.claimed_at) * 1000;
    v_rb := width_bucket(v_run_ms, c_bounds) + 1;
    v_wb := width_bucket(date_part('epoch', v_job.claimed_at - v_job.available_at) * 1000,
        c_bounds) + 1;
    v_rh[v_rb] := 1;
    v_wh[v_wb] := 1;
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, run_count, run_ms, run_hist, wait_hist
    ) values (
        date_trunc('minute', now()), pg_backend_pid(), v_job.queue,
        coalesce(v_job.category, ''), 1, 1, v_run_ms, v_rh, v_wh
    )
    on conflict (minute, backend, queue, category) do update
    set completed = s.completed + 1, run_count = s.run_count + 1,
        run_ms = s.run_ms + excluded.run_ms,
        run_hist[v_rb] = s.run_hist[v_rb] + 1, wait_hist[v_wb] = s.wait_hist[v_wb] + 1;
    select q.* into v_cfg from queue.queues as q where q.queue = v_job.queue;
    if v_cfg.keep_results then
        insert into queue.results (job_id, queue, result) values (v_job.id, v_job.queue, complete.result);
    end if;
    if v_job.cache_key is not null then
        perform cache._job_done(v_job.cache_key, coalesce(v_cfg.cache_policy, 'invalidate'),
            complete.result, 'completed');
    end if;
end
$$;

-- queue.complete_many: complete several claimed jobs at once. Never raises for a lost lease:
-- returns one row per input job with completed = false where the lease was lost (that job
-- is left untouched). Rows are locked in id order, so concurrent batches never deadlock.
-- Raises: 22004 null arrays; 22023 arrays of different lengths.
create or replace function queue.complete_many(
    job_ids bigint[], tokens uuid[], results jsonb[] default null
) returns table (job_id bigint, completed boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
-- every row is found by primary key, whatever the (possibly stale) statistics say
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    v_done text[];  -- "job_id:token" of the completed pairs
    v_keys text[];
    v_key_queues text[];
    v_key_results jsonb[];
    v_queues text[];
    v_cats text[];
    v_run double precision[];
    v_wait double precision[];
    v_group record;
begin
    if complete_many.job_ids is null or complete_many.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if cardinality(complete_many.job_ids) <> cardinality(complete_many.tokens)
        or (complete_many.results is not null
            and cardinality(complete_many.results) <> cardinality(complete_many.job_ids)) then
        raise exception 'job_ids, tokens and results must have the same length'
            using errcode = '22023';
    end if;

    with input as (
        -- a (job, token) pair given twice counts once (with its first result)
        select distinct on (i.id, i.tok) i.id, i.tok, complete_many.results[i.n] as res
        from unnest(complete_many.job_ids, complete_many.tokens) with ordinality as i (id, tok, n)
        order by i.id, i.tok, i.n
    ),
    locked as (
        -- By primary key (= any), never a scan of the running jobs: a token is set only
        -- while a job runs, so token and unexpired lease say "running" without naming the
        -- status (which would let the planner pick jobs_lease_idx on stale statistics).
        select j.id from queue.jobs as j
        where j.id = any (complete_many.job_ids) and j.lease_expires_at > now()
          and exists (select from input as i where i.id = j.id and i.tok = j.token)
        order by j.id
        for update of j
    ),
    gone as (
        delete from queue.jobs as j using locked as l where j.id = l.id
        returning j.id, j.token, j.queue, j.category, j.cache_key, j.claimed_at, j.available_at
    ),
    slots as (
        delete from queue.worker_locks as w using gone as g
        where g.category is not null and w.job_id = g.id
    ),
    kept as (
        insert into queue.results (job_id, queue, result)
        select g.id, g.queue, i.res from gone as g
        join input as i on i.id = g.id and i.tok = g.token
        join queue.queues as q on q.queue = g.queue and q.keep_results
    )
    select coalesce(array_agg(g.id || ':' || g.token), '{}'),
        -- cache effects in key order: concurrent batches lock entries in one order
        array_agg(g.cache_key order by g.cache_key) filter (where g.cache_key is not null),
        array_agg(g.queue order by g.cache_key) filter (where g.cache_key is not null),
        array_agg(i.res order by g.cache_key) filter (where g.cache_key is not null),
        array_agg(g.queue), array_agg(g.category),
        array_agg(date_part('epoch', now() - g.claimed_at) * 1000),
        array_agg(date_part('epoch', g.claimed_at - g.available_at) * 1000)
    into v_done, v_keys, v_key_queues, v_key_results, v_queues, v_cats, v_run, v_wait
    from gone as g join input as i on i.id = g.id and i.tok = g.token;

    for v_group in
        select u.q, u.c, count(*)::int as n, array_agg(u.r) as r, array_agg(u.w) as w
        from unnest(v_queues, v_cats, v_run, v_wait) as u (q, c, r, w)
        group by u.q, u.c
    loop
        perform queue._record(v_group.q, v_group.c, v_group.n, 0, 0, v_group.r, v_group.w);
    end loop;

    for v_i in 1 .. coalesce(cardinality(v_keys), 0) loop
        perform cache._job_done(v_keys[v_i], (queue._config(v_key_queues[v_i])).cache_policy,
            v_key_results[v_i], 'completed');
    end loop;

    return query
    select i.id, (i.id || ':' || i.tok) = any (v_done)
    from unnest(complete_many.job_ids, complete_many.tokens) with ordinality as i (id, tok, n)
    order by i.n;
end
$$;

comment on function queue.complete(bigint, uuid, jsonb) is
'Finish a claimed job (fenced by its token); the job leaves the live table.';
comment on function queue.complete_many(bigint[], uuid[], jsonb[]) is
'Complete several claimed jobs; returns completed = false where the lease was lost.';
revoke all on function queue.complete(bigint, uuid, jsonb) from public;
revoke all on function queue.complete_many(bigint[], uuid[], jsonb[]) from public;
grant execute on function queue.complete(bigint, uuid, jsonb) to andal_worker, andal_admin;
grant execute on function queue.complete_many(bigint[], uuid[], jsonb[])
to andal_worker, andal_admin;
