-- queue.claim: lease up to `batch` ready jobs to `worker`; returns them in claim order.
--
-- Guarantees:
-- * Candidates are pending jobs with available_at <= now() of the given queues (null: every
--   queue), highest priority first, then oldest availability; locked FOR UPDATE SKIP LOCKED,
--   so a claimer never waits on another claimer.
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
    v_full text[];
    v_ids bigint[];
    v_cats text[];
    v_take bigint[];
    v_cat text;
    v_cat_id bigint;
    v_max int;
    v_free int;
    v_attempts bigint[] := '{}'::bigint[];
    v_failures bigint[] := '{}'::bigint[];
    v_cat_ids bigint[] := '{}'::bigint[];
    v_got boolean;
begin
    perform queue._check_name(claim.worker, 'worker');
    if claim.batch is null or claim.batch < 1 or claim.batch > 1000 then
        raise exception 'batch must be between 1 and 1000 (got %)', claim.batch
            using errcode = '22023';
    end if;
    perform queue._check_interval(claim.lease, 'lease', true, false);
    if claim.queues is not null and (
        array_position(claim.queues, null) is not null
        or exists (select from unnest(claim.queues) as q (name)
                   where length(q.name) = 0 or length(q.name) > 128)
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

    -- Categories that cannot take another job now: full or paused.
    select coalesce(array_agg(c.category), '{}') into v_full
    from queue.categories as c
    where c.max_running = 0
       or c.id in (
           select w.category_id from queue.worker_locks as w
           group by w.category_id
           having count(*) >= (select c2.max_running from queue.categories as c2
                               where c2.id = w.category_id)
       );

    -- Candidates, locked without waiting. One statement per shape so each uses its index.
    if claim.queues is null then
        select array_agg(x.id order by x.n), array_agg(x.category order by x.n)
        into v_ids, v_cats
        from (
            select j.id, j.category, row_number() over () as n
            from (
                select j.id, j.category from queue.jobs as j
                where j.status = 'pending' and j.available_at <= now()
                  and (j.category is null or j.category <> all (v_full))
                order by j.priority desc, j.available_at, j.id
                limit claim.batch
                for update skip locked
            ) as j
        ) as x;
    elsif cardinality(claim.queues) = 1 then
        select array_agg(x.id order by x.n), array_agg(x.category order by x.n)
        into v_ids, v_cats
        from (
            select j.id, j.category, row_number() over () as n
            from (
                select j.id, j.category from queue.jobs as j
                where j.queue = claim.queues[1]
                  and j.status = 'pending' and j.available_at <= now()
                  and (j.category is null or j.category <> all (v_full))
                order by j.priority desc, j.available_at, j.id
                limit claim.batch
                for update skip locked
            ) as j
        ) as x;
    else
        -- Several queues: the best `batch` of each queue by its own index, then the best
        -- `batch` of those. Rows locked but not taken are released at commit.
        select array_agg(x.id order by x.priority desc, x.available_at, x.id),
            array_agg(x.category order by x.priority desc, x.available_at, x.id)
        into v_ids, v_cats
        from (
            select c.id, c.category, c.priority, c.available_at
            from (select distinct q.name from unnest(claim.queues) as q (name)) as q
            cross join lateral (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.available_at <= now()
                  and (j.category is null or j.category <> all (v_full))
                order by j.priority desc, j.available_at, j.id
                limit claim.batch
                for update skip locked
            ) as c
            order by c.priority desc, c.available_at, c.id
            limit claim.batch
        ) as x;
    end if;

    if v_ids is null then
        return;
    end if;

    -- Gate the categorised candidates: one advisory try-lock per category, then a recount.
    if cardinality(array_remove(v_cats, null)) > 0 then
        v_take := '{}'::bigint[];
        for v_cat in
            select distinct c.cat from unnest(v_cats) as c (cat) where c.cat is not null
        loop
            select c.id, c.max_running into v_cat_id, v_max
            from queue.categories as c where c.category = v_cat;
            if v_cat_id is null then
                v_cat_id := queue._category_id(v_cat);
                v_max := 1;
            end if;
            v_got := pg_try_advisory_xact_lock(queue._gate_key(v_cat_id));
            v_cat_ids := v_cat_ids || v_cat_id;
            v_attempts := v_attempts || 1::bigint;
            v_failures := v_failures || (case when v_got then 0 else 1 end)::bigint;
            if v_got then
                select v_max - count(*) into v_free
                from queue.worker_locks as w
                join queue.jobs as j on j.id = w.job_id
                where w.category_id = v_cat_id and j.lease_expires_at > now();
                if v_free > 0 then
                    insert into queue.worker_locks (job_id, category_id, worker)
                    select c.id, v_cat_id, claim.worker
                    from unnest(v_ids, v_cats) with ordinality as c (id, cat, n)
                    where c.cat = v_cat
                    order by c.n
                    limit v_free;
                    v_take := v_take || array(
                        select c.id from unnest(v_ids, v_cats) with ordinality as c (id, cat, n)
                        where c.cat = v_cat order by c.n limit v_free
                    );
                end if;
            end if;
        end loop;
        insert into queue.lock_stats as s (minute, backend, category_id, attempts, failures)
        select date_trunc('minute', now()), pg_backend_pid(), u.cat_id, u.a, u.f
        from unnest(v_cat_ids, v_attempts, v_failures) as u (cat_id, a, f)
        on conflict (minute, backend, category_id) do update
        set attempts = s.attempts + excluded.attempts, failures = s.failures + excluded.failures;
        v_ids := array(
            select c.id from unnest(v_ids, v_cats) with ordinality as c (id, cat, n)
            where c.cat is null or c.id = any (v_take)
            order by c.n
        );
    end if;

    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running',
            attempt = j.attempt + 1,
            token = gen_random_uuid(),
            worker = claim.worker,
            claimed_at = now(),
            lease_expires_at = now() + coalesce(
                claim.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                interval '60 seconds'
            )
        where j.id = any (v_ids)
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
