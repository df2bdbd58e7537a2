-- queue.claim: lease up to `batch` ready jobs to `worker`; returns them in claim order.
--
-- Guarantees:
-- * Candidates are pending jobs with available_at <= now() of the given queues (null: every
--   queue), highest priority first, then oldest availability; locked FOR UPDATE SKIP LOCKED,
--   so a claimer never waits on another claimer. Jobs without a category are taken first in
--   one statement; gated jobs fill the rest of the batch. Rows come back in that order.
-- * Each claimed job gets a fresh fencing token and a lease (the `lease` argument, else the
--   queue's lease); attempt counts the runs started, 1 on the first.
-- * Running jobs whose lease expired are taken back first (pending again, or dead-lettered
--   when out of attempts).
-- * Category gate: never more than the category's max_running running jobs of one category,
--   across all workers. Competing claimers of one category are serialised by
--   pg_try_advisory_xact_lock on the category's id; a false return skips the category for
--   this call and is counted in queue.lock_stats. Jobs of a full category never hide jobs of
--   other categories.
-- * Must run in a READ COMMITTED transaction (the gate recounts after taking the lock).
-- Raises: 22004 null worker; 22023 bad worker name, batch outside 1..1000, lease <= 0,
-- null or empty queue names; 55000 when called at another isolation level.
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
    v_claimed int;
    v_want int;
    v_full text[];
    v_ids bigint[];
    v_cats text[];
    v_take bigint[] := '{}'::bigint[];
    v_cat text;
    v_cat_id bigint;
    v_max int;
    v_free int;
    v_got boolean;
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

    -- 1. Jobs without a category: one statement, locked without waiting. One branch runs:
    --    every queue (one index scan) or the listed queues (one index scan per queue).
    return query
    with candidates as materialized (
        select a.id from (
            select j.id from queue.jobs as j
            where claim.queues is null
              and j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id
            limit claim.batch
            for update skip locked
        ) as a
        union all
        (
            select c.id
            from (select distinct q.name from unnest(claim.queues) as q (name)) as q
            cross join lateral (
                select j.id, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.category is null and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit claim.batch
                for update skip locked
            ) as c
            order by c.priority desc, c.available_at, c.id
            limit claim.batch
        )
    ),
    claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = claim.worker, claimed_at = now(),
            lease_expires_at = now() + coalesce(
                claim.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                interval '60 seconds')
        from candidates as c where j.id = c.id
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.token, j.lease_expires_at, j.enqueued_at, j.cache_key, j.cache_version,
            j.available_at
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
    get diagnostics v_claimed = row_count;
    v_want := claim.batch - v_claimed;
    if v_want = 0 then
        return;
    end if;

    -- 2. Gated jobs fill the rest. Categories that cannot take a job now (full or paused)
    --    are left out of the scan, so they never hide other categories' jobs.
    select coalesce(array_agg(c.category), '{}') into v_full
    from queue.categories as c
    where c.max_running = 0
       or c.id in (
           select w.category_id from queue.worker_locks as w
           group by w.category_id
           having count(*) >= (select c2.max_running from queue.categories as c2
                               where c2.id = w.category_id)
       );
    select array_agg(x.id order by x.priority desc, x.available_at, x.id),
        array_agg(x.category order by x.priority desc, x.available_at, x.id)
    into v_ids, v_cats
    from (
        select a.* from (
            select j.id, j.category, j.priority, j.available_at from queue.jobs as j
            where claim.queues is null
              and j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (v_full)
            order by j.priority desc, j.available_at, j.id
            limit v_want
            for update skip locked
        ) as a
        union all
        (
            select c.id, c.category, c.priority, c.available_at
            from (select distinct q.name from unnest(claim.queues) as q (name)) as q
            cross join lateral (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now() and j.category <> all (v_full)
                order by j.priority desc, j.available_at, j.id
                limit v_want
                for update skip locked
            ) as c
            order by c.priority desc, c.available_at, c.id
            limit v_want
        )
    ) as x;
    if v_ids is null then
        return;
    end if;

    -- One advisory try-lock per category serialises its claimers without waiting; under the
    -- lock, recount the category's live slots and take what is free.
    for v_cat in select distinct c.cat from unnest(v_cats) as c (cat) loop
        select c.id, c.max_running into v_cat_id, v_max
        from queue.categories as c where c.category = v_cat;
        if v_cat_id is null then
            v_cat_id := queue._category_id(v_cat);
            v_max := 1;
        end if;
        v_got := pg_try_advisory_xact_lock(queue._gate_key(v_cat_id));
        v_stat_ids := v_stat_ids || v_cat_id;
        v_stat_fail := v_stat_fail || (case when v_got then 0 else 1 end)::bigint;
        continue when not v_got;
        select v_max - count(*) into v_free
        from queue.worker_locks as w
        join queue.jobs as j on j.id = w.job_id
        where w.category_id = v_cat_id and j.lease_expires_at > now();
        continue when v_free <= 0;
        with taken as (
            insert into queue.worker_locks (job_id, category_id, worker)
            select c.id, v_cat_id, claim.worker
            from unnest(v_ids, v_cats) with ordinality as c (id, cat, n)
            where c.cat = v_cat
            order by c.n
            limit v_free
            returning job_id
        )
        select v_take || array_agg(t.job_id) into v_take from taken as t;
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

comment on function queue.claim(text, text[], int, interval) is
'Lease up to batch ready jobs to a worker (SKIP LOCKED, category-gated, fenced by a token).';
revoke all on function queue.claim(text, text[], int, interval) from public;
grant execute on function queue.claim(text, text[], int, interval) to andal_worker, andal_admin;
