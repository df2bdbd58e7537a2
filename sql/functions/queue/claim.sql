-- queue.claim: lease up to `batch` ready jobs to `worker`; returns them in claim order. The
-- body is queue._claim (private), which also returns each attempt's deadline (claim time +
-- the job's timeout, null without one) for queue.claim(..., deadlines => true).
--
-- Guarantees:
-- * Candidates are pending jobs with available_at <= now() of the given queues (null: every
--   queue), highest priority first, then oldest availability, then id, whether gated or not;
--   locked FOR UPDATE SKIP LOCKED, so a claimer never waits on another claimer. A claim of
--   several listed queues shares its batch between them round-robin within a priority level
--   (queue._scan), so one queue's backlog never starves another.
-- * Each claimed job gets a fresh fencing token and a lease (the `lease` argument, else the
--   queue's lease), never past its timeout (queue.enqueue's timeout, else the queue's): the
--   attempt's deadline; attempt counts the runs started, 1 on the first.
-- * Running jobs of the claimed queues (null: of every queue) whose lease expired are taken
--   back first (pending again, or dead-lettered when out of attempts); queue.maintain()
--   takes back every queue's. A claim of listed queues reads only their shards.
-- * Category gate: never more than the category's max_running running jobs of one category,
--   across all workers. Competing claimers of one category are serialised by a try-lock on
--   the category's row in queue.categories (FOR NO KEY UPDATE SKIP LOCKED, held to the end
--   of the transaction); a row another transaction holds skips the category for this call
--   and is counted in queue.lock_stats. A row lock, not an advisory lock, so that no role
--   without andal's grants can take it. Jobs of a full or paused category are left
--   out of the scan, so they never hide other jobs.
-- * Rate limit (queue.set_rate_limit): never more than rate_starts starts of a category in
--   any window of rate_per, across all workers: checked and recorded under the same row
--   lock; a claim that finds the window full leaves the category out (counted in
--   queue.lock_stats.rate_refusals).
-- * Must run in a READ COMMITTED transaction (the gate recounts after taking the lock).
-- * Jobs of a paused queue (queue.pause) are never claimed, whatever `queues` says.
-- * Due ticks of the claimed queues' schedules (queue.schedule) are fired first, in the
--   claim's transaction: a schedule another session is firing is skipped (its row is
--   locked), and a failing one is recorded in its last_error, never raised here. At most
--   10 ticks per claim (queue._fire's budget): the rest of a catch-up stays due for the
--   next claims, and a cron catch-up of missed => 'all' for queue.maintain().
-- Cost: for one queue or every queue, when no lease of the scope has expired, no ready job
-- of the scope has a category and no queue of the scope is paused, one statement selects
-- and leases the jobs; otherwise the candidates are found (and the categorised ones gated)
-- first. When only gated jobs are ready (one queue or every queue), they come from the head
-- of the gated index, locked exactly (queue._gated_head). The backlog of a full or paused
-- category is never read: when the head is mostly such a backlog, the gated candidates
-- come per (queue, category) (queue._gated_scan), so the cost follows the number of
-- categories with ready jobs. The gate costs two statements per round whatever the number
-- of categories in the batch (their rows locked in one, their slots counted and written in
-- the other), plus one for the lock statistics.
-- Raises: 22004 null worker; 22023 bad worker name, batch outside 1..1000, a lease not
-- positive or past queue.config.max_lease, null or empty queue names; 55000 when called at
-- another isolation level; 25006 in a read-only transaction (queue._refuse_read_only).
-- Plans: the SET clause makes each statement of claim run its generic plan, made once per
-- session (plan_cache_mode = force_generic_plan). Re-planning on every call was a fifth of a
-- claim's CPU, and PL/pgSQL's own choice never settles on the generic plan, whose cost it
-- overestimates (it costs a LIMIT it cannot see as a tenth of the table). A generic plan
-- knows neither the batch nor the queue, so enable_seqscan = off keeps every read of
-- queue.jobs on an index whatever the statistics said when the plan was made (as
-- complete_many does); each candidate scan follows its partial index's order
-- (tests/test_claim_plan.py checks the real plans). jit = off: a plan that has to use a
-- disabled scan is costed so high that it would be JIT-compiled on every call (seconds).
-- The functions claim calls inherit these settings, except that queue._scan and
-- queue._candidates keep custom plans: a generic plan costs their filter on the excluded
-- categories so low that it would sort the gated backlog instead of reading its index in
-- order.
create or replace function queue._claim(
    worker text,
    queues text[],
    batch int,
    lease interval
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
    cache_version bigint,
    deadline timestamptz
)
language plpgsql
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
rows 10
as $$
#variable_conflict use_column
declare
    v_name text;
    v_exclude text[];
    v_ids bigint[];
    v_cats text[];
    v_take bigint[] := '{}'::bigint[];
    v_taken bigint[];
    v_cat text;
    v_cat_id bigint;
    v_max int;
    v_got boolean;
    v_dropped boolean;
    v_new text[];
    v_full text[];
    v_got_names text[];
    v_got_ids bigint[];
    v_got_max int[];
    v_got_rate int[];
    v_busy_names text[];
    v_busy_ids bigint[];
    -- the categories this claim holds locked: name, id, limit, starts left, slots taken
    v_lk_names text[] := '{}'::text[];
    v_lk_ids bigint[] := '{}'::bigint[];
    v_lk_max int[] := '{}'::int[];
    v_lk_rate int[] := '{}'::int[];
    v_lk_taken int[] := '{}'::int[];
    v_ords int[];
    v_counts int[];
    v_refused bigint[];
    v_stat_ids bigint[] := '{}'::bigint[];
    v_stat_fail bigint[] := '{}'::bigint[];
    v_rate_refused bigint[] := '{}'::bigint[];
    v_rated boolean := false;
    v_rate_left int;
    v_now timestamptz := queue._lease_clock();
begin
    -- Validation inline, in plain expressions (no query): this is the hot path.
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.claim');
    end if;
    if _claim.worker is null or length(_claim.worker) not between 1 and 128 then
        perform queue._check_name(_claim.worker, 'worker');
    end if;
    if _claim.batch is null or _claim.batch < 1 or _claim.batch > 1000 then
        raise exception 'batch must be between 1 and 1000 (got %)', _claim.batch
            using errcode = '22023';
    end if;
    if _claim.lease is not null then
        perform queue._check_interval(_claim.lease, 'lease', true, false, 'lease');
    end if;
    if _claim.queues is not null then
        foreach v_name in array _claim.queues loop
            if v_name is null or length(v_name) not between 1 and 128 then
                raise exception 'queues must hold queue names (1 to 128 characters, no nulls)'
                    using errcode = '22023';
            end if;
        end loop;
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.claim must run at READ COMMITTED isolation (not %)',
            current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'The category gate recounts running jobs after taking its lock.';
    end if;

    -- A schedule of the claimed queues is due: fire its ticks first, so their jobs can be
    -- claimed now (one index probe when none is due).
    if _claim.queues is null then
        if (select s.next_at from queue.schedules as s
            where s.task is null and s.next_at <= now()
            order by s.next_at limit 1) is not null then
            perform queue._fire_due(null, 10, 10);
        end if;
    elsif (select s.next_at from queue.schedules as s
           where s.task is null and s.queue = any (_claim.queues) and s.next_at <= now()
           limit 1) is not null then
        perform queue._fire_due(_claim.queues, 10, 10);
    end if;

    -- Direct path (every queue, or one queue): when no lease has expired and no ready job of
    -- the scope has a category, the best `batch` jobs are the best ungated ones. One
    -- statement: one index scan in claim order picks and locks them (SKIP LOCKED; its LIMIT
    -- stops it, so it locks only the rows it returns) and the update leases them. Its two
    -- probes are evaluated first; when either finds a row nothing is scanned nor locked, and
    -- the general path below runs (as it does when the statement claims nothing).
    if _claim.queues is null then
        return query
        with claimed as (
            update queue.jobs as j
            set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
                worker = _claim.worker, claimed_at = v_now,
                lease_expires_at = least(v_now + coalesce(
                    _claim.lease,
                    (select q.lease from queue.queues as q where q.queue = j.queue),
                    queue._lease_default()), v_now + j.timeout)
            where j.id = any (array(
                    select c.id from queue.jobs as c
                    where c.status = 'pending' and c.category is null
                      and c.available_at <= now()
                    order by c.priority desc, c.available_at, c.id
                    limit _claim.batch
                    for update skip locked))
              and (select x.lease_expires_at from queue.jobs as x
                   where x.status = 'running' and x.lease_expires_at <= v_now
                   order by x.lease_expires_at limit 1) is null
              and (select g.id from queue.jobs as g
                   where g.status = 'pending' and g.category is not null
                     and g.available_at <= now()
                   order by g.priority desc, g.available_at, g.id limit 1) is null
              and (select p.queue from queue.queues as p where p.paused limit 1) is null
            returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt,
                j.max_attempts, j.token, j.lease_expires_at, j.enqueued_at, j.cache_key,
                j.cache_version, j.available_at, v_now + j.timeout as deadline
        )
        select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
            c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
        from claimed as c
        order by c.priority desc, c.available_at, c.id;
        if found then
            return;
        end if;
    elsif cardinality(_claim.queues) = 1 then
        return query
        with claimed as (
            update queue.jobs as j
            set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
                worker = _claim.worker, claimed_at = v_now,
                lease_expires_at = least(v_now + coalesce(
                    _claim.lease,
                    (select q.lease from queue.queues as q where q.queue = _claim.queues[1]),
                    queue._lease_default()), v_now + j.timeout)
            where j.id = any (array(
                    select c.id from queue.jobs as c
                    where c.queue = _claim.queues[1]
                      and c.status = 'pending' and c.category is null
                      and c.available_at <= now()
                    order by c.priority desc, c.available_at, c.id
                    limit _claim.batch
                    for update skip locked))
              and j.queue = _claim.queues[1]
              and (select x.lease_expires_at from queue.jobs as x
                   where x.queue = _claim.queues[1]
                     and x.status = 'running' and x.lease_expires_at <= v_now
                   order by x.lease_expires_at limit 1) is null
              and (select g.id from queue.jobs as g
                   where g.queue = _claim.queues[1]
                     and g.status = 'pending' and g.category is not null
                     and g.available_at <= now()
                   order by g.priority desc, g.available_at, g.id limit 1) is null
              and (select p.queue from queue.queues as p
                   where p.paused and p.queue = _claim.queues[1]) is null
            returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt,
                j.max_attempts, j.token, j.lease_expires_at, j.enqueued_at, j.cache_key,
                j.cache_version, j.available_at, v_now + j.timeout as deadline
        )
        select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
            c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
        from claimed as c
        order by c.priority desc, c.available_at, c.id;
        if found then
            return;
        end if;
    end if;

    -- General path: several queues, or the direct path claimed nothing (a lease expired, a
    -- gated job is ready, a queue is paused, or no job is ready: the direct statement cannot
    -- tell which, and what its probes saw may have changed since).

    -- Paused queues are left out: a claim of every queue becomes one of the queues not
    -- paused whose ready jobs can be among its best (queue._unpaused_queues; expired leases
    -- of the other queues are then taken back by their own claims or queue.maintain).
    if (select p.queue from queue.queues as p where p.paused limit 1) is not null then
        _claim.queues := queue._unpaused_queues(_claim.queues, _claim.batch);
        if cardinality(_claim.queues) = 0 then
            return;
        end if;
    end if;

    -- Take back expired leases first (an index probe when there are none).
    if _claim.queues is null then
        if (select x.lease_expires_at from queue.jobs as x
            where x.status = 'running' and x.lease_expires_at <= v_now
            order by x.lease_expires_at limit 1) is not null then
            perform queue._reap(100);
        end if;
    elsif exists (
        select from unnest(_claim.queues) as q (name)
        where (select x.lease_expires_at from queue.jobs as x
               where x.queue = q.name
                 and x.status = 'running' and x.lease_expires_at <= v_now
               order by x.lease_expires_at limit 1) is not null
    ) then
        perform queue._reap(100, _claim.queues);
    end if;

    -- Categories that cannot take a job now: paused, or as many live slots as their limit
    -- (a slot whose lease expired is not live, whichever queue its job is in).
    v_exclude := queue._full_categories(v_now);

    -- 1. The best `batch` candidates, locked.
    select array_agg(c.id order by c.priority desc, c.available_at, c.id),
        array_agg(c.category order by c.priority desc, c.available_at, c.id)
    into v_ids, v_cats
    from queue._candidates(_claim.queues, _claim.batch, v_exclude, '{}') as c;
    if v_ids is null then
        return;
    end if;

    if cardinality(array_remove(v_cats, null)) = 0 then
        -- none has a category: lease them all
        v_take := v_ids;
    else
        -- 2. Some candidates have a category. Gate them, every category of the batch at
        --    once: one statement try-locks the rows of the categories not locked yet (a row
        --    another transaction holds skips its category for this call), then one statement
        --    recounts the live slots of the locked categories (its snapshot is taken after
        --    the locks: it sees every slot of a claim that held a lock before) and writes the
        --    slots taken. A category that runs out of slots (or whose lock is busy) is left
        --    out and the batch is filled from further candidates, in rounds.
        for v_round in 1 .. 8 loop
            v_dropped := false;
            v_take := v_take || array(
                select c.id from unnest(v_ids, v_cats) as c (id, cat) where c.cat is null);
            v_new := array(
                select distinct c.cat from unnest(v_cats) as c (cat)
                where c.cat is not null and c.cat <> all (v_lk_names));
            if cardinality(v_new) > 0 then
                -- The gate lock is a row lock on the category's row, not an advisory lock:
                -- any role that can connect can take any advisory key (and read the held
                -- ones in pg_locks), but only andal's roles can lock this row. The limit and
                -- the starts its rate limit leaves are read under the lock.
                select coalesce(array_agg(k.category), '{}'), coalesce(array_agg(k.id), '{}'),
                    coalesce(array_agg(k.max_running), '{}'), coalesce(array_agg(k.rate_left), '{}'),
                    coalesce(bool_or(k.rate_left is not null), false)
                into v_got_names, v_got_ids, v_got_max, v_got_rate, v_got
                from (
                    select c.id, c.category, c.max_running,
                        case when c.rate_starts is not null then queue._rate_left(
                            c.rate_log, c.rate_starts, c.rate_per, v_now) end as rate_left
                    from queue.categories as c
                    where c.category = any (v_new)
                    for no key update skip locked
                ) as k;
                v_rated := v_rated or v_got;
                if cardinality(v_got_names) < cardinality(v_new) then
                    -- not locked: busy (another claimer holds the row), or no row yet
                    select coalesce(array_agg(c.category), '{}'), coalesce(array_agg(c.id), '{}')
                    into v_busy_names, v_busy_ids
                    from queue.categories as c
                    where c.category = any (v_new) and c.category <> all (v_got_names);
                    v_stat_ids := v_stat_ids || v_busy_ids;
                    v_stat_fail := v_stat_fail || array_fill(1::bigint, array[cardinality(v_busy_ids)]);
                    v_exclude := v_exclude || v_busy_names;
                    v_dropped := v_dropped or cardinality(v_busy_names) > 0;
                    -- a category without a row gets one (limit 1), then its lock
                    for v_cat in
                        select n.cat from unnest(v_new) as n (cat)
                        where n.cat <> all (v_got_names) and n.cat <> all (v_busy_names)
                    loop
                        v_cat_id := queue._category_id(v_cat);
                        select c.max_running,
                            queue._rate_left(c.rate_log, c.rate_starts, c.rate_per, v_now)
                        into v_max, v_rate_left
                        from queue.categories as c
                        where c.id = v_cat_id
                        for no key update skip locked;
                        if found then
                            -- (its statistics row with the other locked ones, below)
                            v_got_names := v_got_names || v_cat;
                            v_got_ids := v_got_ids || v_cat_id;
                            v_got_max := v_got_max || v_max;
                            v_got_rate := v_got_rate || v_rate_left;
                            v_rated := v_rated or v_rate_left is not null;
                        else
                            v_stat_ids := v_stat_ids || v_cat_id;
                            v_stat_fail := v_stat_fail || 1::bigint;
                            v_exclude := v_exclude || v_cat;
                            v_dropped := true;
                        end if;
                    end loop;
                end if;
                v_stat_ids := v_stat_ids || v_got_ids;
                v_stat_fail := v_stat_fail || array_fill(0::bigint, array[cardinality(v_got_ids)]);
                v_lk_names := v_lk_names || v_got_names;
                v_lk_ids := v_lk_ids || v_got_ids;
                v_lk_max := v_lk_max || v_got_max;
                v_lk_rate := v_lk_rate || v_got_rate;
                v_lk_taken := v_lk_taken || array_fill(0, array[cardinality(v_got_ids)]);
            end if;
            -- Under the locks: each locked category's free slots (its limit less its live
            -- slots, this claim's own included; no more than its rate window has left), its
            -- candidates taken in claim order up to that, their slots written in one insert.
            with cand as materialized (
                select c.id, c.cat, c.n
                from unnest(v_ids, v_cats) with ordinality as c (id, cat, n)
                where c.cat = any (v_lk_names)
            ),
            room as materialized (
                select k.name, k.id, k.ord, k.rate, s.slots,
                    greatest(least(s.slots, coalesce(k.rate, s.slots)), 0) as free
                from unnest(v_lk_names, v_lk_ids, v_lk_max, v_lk_rate)
                    with ordinality as k (name, id, max, rate, ord)
                cross join lateral (
                    select k.max - count(*) as slots
                    from queue.worker_locks as w
                    join queue.jobs as j on j.id = w.job_id
                    where w.category_id = k.id
                      and (j.lease_expires_at > v_now or j.id = any (v_take))
                ) as s
                where k.name = any (v_cats)
            ),
            taken as (
                insert into queue.worker_locks (job_id, category_id, worker)
                select r.id, r.cat_id, _claim.worker
                from (
                    select c.id, k.id as cat_id, k.free,
                        row_number() over (partition by c.cat order by c.n) as rn
                    from cand as c join room as k on k.name = c.cat
                ) as r
                where r.rn <= r.free
                returning job_id, category_id
            ),
            per as materialized (
                select k.name, k.id, k.ord, k.rate, k.slots, k.free,
                    coalesce(t.n, 0) as n_taken, c.n as n_cand
                from room as k
                join (select c.cat, count(*) as n from cand as c group by c.cat) as c
                    on c.cat = k.name
                left join (
                    select t.category_id, count(*) as n from taken as t group by t.category_id
                ) as t on t.category_id = k.id
            )
            select coalesce((select array_agg(t.job_id) from taken as t), '{}'),
                coalesce(array_agg(p.name) filter (where p.n_taken >= p.free), '{}'),
                coalesce(bool_or(p.n_taken >= p.free and p.n_cand > p.n_taken), false),
                coalesce(array_agg(p.id) filter (where p.rate < p.slots), '{}'),
                coalesce(array_agg(p.ord::int) filter (where p.n_taken > 0), '{}'),
                coalesce(array_agg(p.n_taken::int) filter (where p.n_taken > 0), '{}')
            into v_taken, v_full, v_got, v_refused, v_ords, v_counts
            from per as p;
            v_take := v_take || v_taken;
            -- no slot left: the category's other candidates go back, it is left out
            v_exclude := v_exclude || v_full;
            v_dropped := v_dropped or v_got;
            v_rate_refused := v_rate_refused || v_refused;
            for v_r in 1 .. cardinality(v_ords) loop
                v_lk_taken[v_ords[v_r]] := v_lk_taken[v_ords[v_r]] + v_counts[v_r];
                v_lk_rate[v_ords[v_r]] := v_lk_rate[v_ords[v_r]] - v_counts[v_r];
            end loop;
            exit when not v_dropped or cardinality(v_take) >= _claim.batch;
            select array_agg(c.id order by c.priority desc, c.available_at, c.id),
                array_agg(c.category order by c.priority desc, c.available_at, c.id)
            into v_ids, v_cats
            from queue._candidates(_claim.queues, _claim.batch - cardinality(v_take), v_exclude,
                v_take) as c;
            exit when v_ids is null;
        end loop;

        insert into queue.lock_stats as s (
            minute, backend, category_id, attempts, failures, rate_refusals
        )
        select date_trunc('minute', now()), pg_backend_pid(), u.cat_id, 1, u.f,
            case when u.cat_id = any (v_rate_refused) then 1 else 0 end
        from unnest(v_stat_ids, v_stat_fail) as u (cat_id, f)
        on conflict (minute, backend, category_id) do update
        set attempts = s.attempts + 1, failures = s.failures + excluded.failures,
            rate_refusals = s.rate_refusals + excluded.rate_refusals;
        -- the starts of rate-limited categories join their window: its latest rate_starts
        -- start times are all a later claim needs (still under the category's row lock)
        if v_rated then
            perform queue._rate_record(v_lk_ids, v_lk_taken, v_now);
        end if;
    end if;

    -- 3. Lease the jobs taken, in claim order.
    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = _claim.worker, claimed_at = v_now,
            lease_expires_at = least(v_now + coalesce(
                _claim.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                queue._lease_default()), v_now + j.timeout)
        where j.id = any (v_take)
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.token, j.lease_expires_at, j.enqueued_at, j.cache_key, j.cache_version,
            j.available_at, v_now + j.timeout as deadline
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
end
$$;

-- The public form: exactly queue._claim's jobs, without their deadlines (queue.claim with
-- deadlines => true adds them; claim_deadlines.sql).
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
begin
    return query
    select c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version
    from queue._claim(claim.worker, claim.queues, claim.batch, claim.lease) as c;
end
$$;


revoke all on function queue._claim(text, text[], int, interval) from public;

comment on function queue.claim(text, text[], int, interval) is
'Lease up to batch ready jobs to a worker (SKIP LOCKED, category-gated, fenced by a token).';
revoke all on function queue.claim(text, text[], int, interval) from public;
grant execute on function queue.claim(text, text[], int, interval) to andal_worker, andal_admin;
