-- queue.claim: lease up to `batch` ready jobs to `worker`; returns them in claim order.
--
-- Guarantees:
-- * Candidates are pending jobs with available_at <= now() of the given queues (null: every
--   queue), highest priority first, then oldest availability, then id, whether gated or not;
--   locked FOR UPDATE SKIP LOCKED, so a claimer never waits on another claimer.
-- * Each claimed job gets a fresh fencing token and a lease (the `lease` argument, else the
--   queue's lease); attempt counts the runs started, 1 on the first.
-- * Running jobs whose lease expired are taken back first (pending again, or dead-lettered
--   when out of attempts).
-- * Category gate: never more than the category's max_running running jobs of one category,
--   across all workers. Competing claimers of one category are serialised by
--   pg_try_advisory_xact_lock on the category's id; a false return skips the category for
--   this call and is counted in queue.lock_stats. Jobs of a full or paused category are left
--   out of the scan, so they never hide other jobs.
-- * Must run in a READ COMMITTED transaction (the gate recounts after taking the lock).
-- Cost: when the best `batch` candidates have no category, one statement selects and leases
-- them; otherwise the categorised candidates are gated first.
-- Raises: 22004 null worker; 22023 bad worker name, batch outside 1..1000, lease <= 0,
-- null or empty queue names; 55000 when called at another isolation level.
-- _scan: the best `lim` ready jobs of `queues` (null: every queue), locked FOR UPDATE SKIP
-- LOCKED, leaving out the categories in exclude_categories and the ids in exclude_ids.
-- Ungated and gated jobs are read from their own partial indexes; for listed queues, each
-- queue's index is read on its own (an index scan per queue and kind, never a sort of the
-- backlog). Each scan locks up to `lim` rows: rows locked but not among the best stay locked
-- until the transaction (or subtransaction) ends.
create or replace function queue._scan(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[]
) returns table (id bigint, category text, priority int, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
rows 10
as $$
#variable_conflict use_column
begin
    return query
    select c.id, c.category, c.priority, c.available_at from (
        select a.id, a.category, a.priority, a.available_at from (
            select j.id, j.category, j.priority, j.available_at from queue.jobs as j
            where _scan.queues is null
              and j.status = 'pending' and j.category is null and j.available_at <= now()
              and j.id <> all (exclude_ids)
            order by j.priority desc, j.available_at, j.id
            limit lim
            for update skip locked
        ) as a
        union all
        select a.id, a.category, a.priority, a.available_at from (
            select j.id, j.category, j.priority, j.available_at from queue.jobs as j
            where _scan.queues is null
              and j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
            order by j.priority desc, j.available_at, j.id
            limit lim
            for update skip locked
        ) as a
        union all
        select b.id, b.category, b.priority, b.available_at
        from (select distinct q.name from unnest(_scan.queues) as q (name)) as q
        cross join lateral (
            select j.id, j.category, j.priority, j.available_at from queue.jobs as j
            where j.queue = q.name
              and j.status = 'pending' and j.category is null and j.available_at <= now()
              and j.id <> all (exclude_ids)
            order by j.priority desc, j.available_at, j.id
            limit lim
            for update skip locked
        ) as b
        union all
        select b.id, b.category, b.priority, b.available_at
        from (select distinct q.name from unnest(_scan.queues) as q (name)) as q
        cross join lateral (
            select j.id, j.category, j.priority, j.available_at from queue.jobs as j
            where j.queue = q.name
              and j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
            order by j.priority desc, j.available_at, j.id
            limit lim
            for update skip locked
        ) as b
    ) as c
    order by c.priority desc, c.available_at, c.id
    limit lim;
end
$$;

-- _candidates: queue._scan, such that the caller holds row locks on the returned jobs only.
-- The scan over-locks only when more than one of its index scans finds rows: several queues,
-- or ready jobs of both kinds (with and without a category). Then it runs in a
-- subtransaction that is rolled back — giving back every lock it took — and only the chosen
-- rows are locked again (SKIP LOCKED: a row another claimer took in between is left out).
-- Otherwise ready jobs the claim did not take would stay hidden from every other claimer
-- until the claimer's transaction ends (a claim sharing the handler's transaction). In the
-- common case (one kind of job, one or every queue) two index probes decide, and the scan
-- runs directly.
create or replace function queue._candidates(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[]
) returns table (id bigint, category text, priority int, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
rows 10
as $$
#variable_conflict use_column
declare
    v_best bigint[];
    v_mixed boolean;
begin
    -- Each probe follows its claim index's order and reads one index entry (an EXISTS
    -- drops the ORDER BY and may be planned as a sequential scan).
    if queues is null then
        v_mixed := (
            select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null and (
            select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (exclude_categories)
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null;
    elsif cardinality(queues) = 1 then
        v_mixed := (
            select j.id from queue.jobs as j
            where j.queue = queues[1]
              and j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null and (
            select j.id from queue.jobs as j
            where j.queue = queues[1]
              and j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (exclude_categories)
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null;
    else
        v_mixed := true;
    end if;
    if not v_mixed then
        return query
        select s.id, s.category, s.priority, s.available_at
        from queue._scan(queues, lim, exclude_categories, exclude_ids) as s;
        return;
    end if;
    begin
        select array_agg(s.id) into v_best
        from queue._scan(queues, lim, exclude_categories, exclude_ids) as s;
        raise sqlstate 'AN900';  -- roll the subtransaction back: its row locks go with it
    exception when sqlstate 'AN900' then
        null;
    end;
    return query
    select j.id, j.category, j.priority, j.available_at from queue.jobs as j
    where j.id = any (v_best) and j.status = 'pending' and j.available_at <= now()
    order by j.priority desc, j.available_at, j.id
    for update skip locked;
end
$$;

create or replace function queue.claim(
    worker text,
    queues text[] default null,
    batch int default 1,
    lease interval default null
) returns table (
    job_id bigint,
    queue text,
    category text,
    priority int,
    payload jsonb,
    attempt int,
    max_attempts int,
    token uuid,
    lease_expires_at timestamptz,
    enqueued_at timestamptz,
    cache_key text,
    cache_version bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
rows 10
as $$
#variable_conflict use_column
declare
    v_rows queue.jobs[];
    v_exclude text[];
    v_ids bigint[];
    v_cats text[];
    v_take bigint[] := '{}'::bigint[];
    v_taken bigint[];
    v_cat text;
    v_cat_id bigint;
    v_max int;
    v_free int;
    v_got boolean;
    v_dropped boolean;
    v_locked bigint[] := '{}'::bigint[];
    v_stat_ids bigint[] := '{}'::bigint[];
    v_stat_fail bigint[] := '{}'::bigint[];
begin
    -- Validation inline: this is the hot path.
    if claim.worker is null or length(claim.worker) not between 1 and 128 then
        perform queue._check_name(claim.worker, 'worker');
    end if;
    if claim.batch is null or claim.batch < 1 or claim.batch > 1000 then
        raise exception 'batch must be between 1 and 1000 (got %)', claim.batch
            using errcode = '22023';
    end if;
    if claim.lease is not null and claim.lease <= interval '0' then
        perform queue._check_interval(claim.lease, 'lease', true, false);
    end if;
    if claim.queues is not null and (
        array_position(claim.queues, null) is not null
        or exists (select from unnest(claim.queues) as q (name)
                   where length(q.name) not between 1 and 128)
    ) then
        raise exception 'queues must hold queue names (1 to 128 characters, no nulls)'
            using errcode = '22023';
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.claim must run at READ COMMITTED isolation (not %)',
            current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'The category gate recounts running jobs after taking its lock.';
    end if;

    -- Take back expired leases (an index probe when there are none).
    if exists (select from queue.jobs as j
               where j.status = 'running' and j.lease_expires_at <= now()) then
        perform queue._reap(100);
    end if;

    -- Categories that cannot take a job now: paused, or as many live slots as their limit.
    select coalesce(array_agg(f.category), '{}') into v_exclude
    from (
        select c.category from queue.categories as c where c.max_running = 0
        union all
        select c.category
        from (select w.category_id, count(*) as n from queue.worker_locks as w group by 1) as r
        join queue.categories as c on c.id = r.category_id
        where r.n >= c.max_running
    ) as f;

    -- 1. The best `batch` candidates, locked. If none has a category, they are leased in the
    --    same statement (the common case: one statement).
    with best as materialized (
        select c.id, c.category, c.priority, c.available_at
        from queue._candidates(claim.queues, claim.batch, v_exclude, '{}') as c
    ),
    claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = claim.worker, claimed_at = now(),
            lease_expires_at = now() + coalesce(
                claim.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                interval '60 seconds')
        from best as b
        where j.id = b.id
          and not exists (select from best as g where g.category is not null)
        returning j.*
    )
    select
        (select array_agg(b.id order by b.priority desc, b.available_at, b.id) from best as b),
        (select array_agg(b.category order by b.priority desc, b.available_at, b.id)
         from best as b),
        (select array_agg(c::queue.jobs) from claimed as c)
    into v_ids, v_cats, v_rows;

    if v_ids is null then
        return;
    end if;
    if v_rows is not null then
        return query
        select r.id, r.queue, r.category, r.priority, r.payload, r.attempt, r.max_attempts,
            r.token, r.lease_expires_at, r.enqueued_at, r.cache_key, r.cache_version
        from unnest(v_rows) as r
        order by r.priority desc, r.available_at, r.id;
        return;
    end if;

    -- 2. Some candidates have a category. Gate them: one advisory try-lock per category
    --    serialises its claimers without waiting; under the lock, recount the category's
    --    live slots and take what is free. A category that runs out of slots (or whose lock
    --    is busy) is left out and the batch is filled from further candidates, in rounds.
    for v_round in 1 .. 8 loop
        v_dropped := false;
        v_take := v_take || array(
            select c.id from unnest(v_ids, v_cats) as c (id, cat) where c.cat is null);
        for v_cat in
            select distinct c.cat from unnest(v_cats) as c (cat) where c.cat is not null
        loop
            select c.id, c.max_running into v_cat_id, v_max
            from queue.categories as c where c.category = v_cat;
            if v_cat_id is null then
                v_cat_id := queue._category_id(v_cat);
                v_max := 1;
            end if;
            if not v_cat_id = any (v_locked) then
                v_got := pg_try_advisory_xact_lock(queue._gate_key(v_cat_id));
                v_stat_ids := v_stat_ids || v_cat_id;
                v_stat_fail := v_stat_fail || (case when v_got then 0 else 1 end)::bigint;
                if not v_got then
                    v_exclude := v_exclude || v_cat;
                    v_dropped := true;
                    continue;
                end if;
                v_locked := v_locked || v_cat_id;
            end if;
            select v_max - count(*) into v_free
            from queue.worker_locks as w
            join queue.jobs as j on j.id = w.job_id
            where w.category_id = v_cat_id
              and (j.lease_expires_at > now() or j.id = any (v_take));
            with taken as (
                insert into queue.worker_locks (job_id, category_id, worker)
                select c.id, v_cat_id, claim.worker
                from unnest(v_ids, v_cats) with ordinality as c (id, cat, n)
                where c.cat = v_cat
                order by c.n
                limit greatest(v_free, 0)
                returning job_id
            )
            select array_agg(t.job_id) into v_taken from taken as t;
            v_take := v_take || coalesce(v_taken, '{}');
            if coalesce(cardinality(v_taken), 0) >= v_free then
                -- no slot left: its other candidates go back, the category is left out
                v_exclude := v_exclude || v_cat;
                v_dropped := v_dropped
                    or (select count(*) from unnest(v_cats) as c (cat) where c.cat = v_cat)
                       > coalesce(cardinality(v_taken), 0);
            end if;
        end loop;
        exit when not v_dropped or cardinality(v_take) >= claim.batch;
        select array_agg(c.id order by c.priority desc, c.available_at, c.id),
            array_agg(c.category order by c.priority desc, c.available_at, c.id)
        into v_ids, v_cats
        from queue._candidates(claim.queues, claim.batch - cardinality(v_take), v_exclude,
            v_take) as c;
        exit when v_ids is null;
    end loop;

    insert into queue.lock_stats as s (minute, backend, category_id, attempts, failures)
    select date_trunc('minute', now()), pg_backend_pid(), u.cat_id, 1, u.f
    from unnest(v_stat_ids, v_stat_fail) as u (cat_id, f)
    on conflict (minute, backend, category_id) do update
    set attempts = s.attempts + 1, failures = s.failures + excluded.failures;

    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = claim.worker, claimed_at = now(),
            lease_expires_at = now() + coalesce(
                claim.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                interval '60 seconds')
        where j.id = any (v_take)
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.token, j.lease_expires_at, j.enqueued_at, j.cache_key, j.cache_version,
            j.available_at
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
end
$$;

comment on function queue._scan(text[], int, text[], bigint[]) is
'Private: the best ready jobs, locked SKIP LOCKED, by partial index.';
comment on function queue._candidates(text[], int, text[], bigint[]) is
'Private: queue._scan holding locks on the returned rows only.';
comment on function queue.claim(text, text[], int, interval) is
'Lease up to batch ready jobs to a worker (SKIP LOCKED, category-gated, fenced by a token).';
revoke all on function queue._scan(text[], int, text[], bigint[]) from public;
revoke all on function queue._candidates(text[], int, text[], bigint[]) from public;
revoke all on function queue.claim(text, text[], int, interval) from public;
grant execute on function queue.claim(text, text[], int, interval) to andal_worker, andal_admin;
