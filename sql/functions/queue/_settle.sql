-- The side effects of a job's state change, in one place (as cache._apply is the cache's
-- one write path): queue._settle_many, the funnel, set-based, called by complete,
-- complete_many, the take-back of expired leases (queue._reap) and queue._settle (one job:
-- fail, release, cancel). Private: granted to nobody.
--
-- Per job i: outcomes[i] is 'completed', 'retry' (pending again, an attempt spent), 'dead'
-- (dead-lettered), 'cancelled' (dead-lettered by an abort or cancel) or 'released'
-- (pending again, no attempt spent). In order:
-- * the gate: the slots of the jobs with a category are freed, in one call
--   (queue._free_slots);
-- * statistics: an attempt that ran (claimed_ats[i] not null) and ended completed, retry or
--   dead is counted in this backend's row of the minute (queue._record, once per queue and
--   category), unless `counted`: the caller counted them in its own statement (complete and
--   complete_many count in the statement that deletes the jobs: their hot path);
-- * the cache: each job's cache key (when given) is invalidated or rewritten by its queue's
--   cache_policy (cache._job_done; released jobs leave it alone), in key order, so
--   concurrent batches lock entries in one order;
-- * the hint: once per queue with a job claimable again now (ready_ats[i] <= now()),
--   claimers get one on andal_jobs (queue._notify_ready).
-- Every step is skipped by a plain expression when no job needs it.
create or replace function queue._settle_many(
    job_ids bigint [], outcomes text [], queues text [], categories text [],
    claimed_ats timestamptz [] default null, available_ats timestamptz [] default null,
    cache_keys text [] default null, results jsonb [] default null,
    ready_ats timestamptz [] default null, counted boolean default false
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids bigint[];
    v_queues text[];
    v_row record;
begin
    if cardinality(categories) > 0 and array_position(categories, null) is null then
        -- every job has one (a gated batch): no query to pick them
        perform queue._free_slots(job_ids, queues);
    elsif array_remove(categories, null) <> '{}' then
        select array_agg(u.id), array_agg(u.q) into v_ids, v_queues
        from unnest(job_ids, queues, categories) as u (id, q, c) where u.c is not null;
        perform queue._free_slots(v_ids, v_queues);
    end if;
    if not counted and array_remove(claimed_ats, null) <> '{}' then
        perform queue._settle_counted(outcomes, queues, categories, claimed_ats, available_ats);
    end if;
    if array_remove(cache_keys, null) <> '{}' then
        for v_row in
            select u.k, u.q, u.r, u.o from unnest(cache_keys, queues, results, outcomes)
                as u (k, q, r, o)
            where u.k is not null and u.o <> 'released'
            order by u.k
        loop
            perform cache._job_done(v_row.k,
                coalesce((queue._config(v_row.q)).cache_policy, 'invalidate'), v_row.r,
                case v_row.o when 'completed' then 'completed' when 'retry' then 'retry'
                    else 'dead' end);
        end loop;
    end if;
    if cardinality(ready_ats) = 1 then  -- one job: no query
        if ready_ats[1] <= now() then
            perform queue._notify_ready(queues[1]);
        end if;
    elsif array_remove(ready_ats, null) <> '{}' then
        for v_row in
            select distinct u.q from unnest(queues, ready_ats) as u (q, r) where u.r <= now()
        loop
            perform queue._notify_ready(v_row.q);
        end loop;
    end if;
end
$$;

-- _settle_counted: the statistics step of queue._settle_many: the attempts that ran and
-- ended completed, retry or dead, counted once per queue and category (queue._record).
create or replace function queue._settle_counted(
    outcomes text [], queues text [], categories text [], claimed_ats timestamptz [],
    available_ats timestamptz []
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := queue._lease_clock();
    v_row record;
begin
    if cardinality(outcomes) = 1 then  -- one attempt (fail, release, cancel): no grouping
        if claimed_ats[1] is not null and outcomes[1] in ('completed', 'retry', 'dead') then
            perform queue._record(queues[1], categories[1], (outcomes[1] = 'completed')::int,
                (outcomes[1] = 'retry')::int, (outcomes[1] = 'dead')::int,
                array[date_part('epoch', v_now - claimed_ats[1]) * 1000],
                array[date_part('epoch', claimed_ats[1] - available_ats[1]) * 1000]);
        end if;
        return;
    end if;
    for v_row in
        select u.q, u.c, count(*) filter (where u.o = 'completed')::int as completed,
            count(*) filter (where u.o = 'retry')::int as retried,
            count(*) filter (where u.o = 'dead')::int as dead,
            array_agg(date_part('epoch', v_now - u.at) * 1000) as run_ms,
            array_agg(date_part('epoch', u.at - u.av) * 1000) as wait_ms
        from unnest(outcomes, queues, categories, claimed_ats, available_ats)
            as u (o, q, c, at, av)
        where u.at is not null and u.o in ('completed', 'retry', 'dead')
        group by u.q, u.c
    loop
        perform queue._record(v_row.q, v_row.c, v_row.completed, v_row.retried, v_row.dead,
            v_row.run_ms, v_row.wait_ms);
    end loop;
end
$$;

-- _settle: queue._settle_many for one job (fail, release, cancel).
create or replace function queue._settle(
    job_id bigint, queue_name text, category_name text, outcome text,
    claimed_at timestamptz, available_at timestamptz, cache_key text default null,
    result jsonb default null, ready_at timestamptz default null
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    perform queue._settle_many(array[job_id], array[outcome], array[queue_name],
        array[category_name], array[claimed_at], array[available_at], array[cache_key],
        array[result], array[ready_at]);
end
$$;

revoke all on function queue._settle_many(
    bigint [], text [], text [], text [], timestamptz [], timestamptz [], text [], jsonb [],
    timestamptz [], boolean
) from public;
revoke all on function queue._settle_counted(
    text [], text [], text [], timestamptz [], timestamptz []
) from public;
revoke all on function queue._settle(
    bigint, text, text, text, timestamptz, timestamptz, text, jsonb, timestamptz
) from public;
