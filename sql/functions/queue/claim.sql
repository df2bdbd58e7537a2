-- queue.claim: lease up to `batch` ready jobs to `worker`; returns them in claim order. The
-- body is queue._claim (private), which also returns each attempt's deadline (claim time +
-- the job's timeout, null without one) for queue.claim(..., deadlines => true). It is a
-- dispatcher: the checks and the due schedules, then queue._claim_direct (the one-statement
-- path) and, when that claims nothing, queue._claim_general (take-back, candidates, the
-- category gate of queue/_gate.sql, the lease of queue/_lease.sql). Each returns
-- queue.claimed rows (migration 0054), the claimed row's one declaration.
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
-- The functions claim calls (its parts included: they carry no SET clause of their own,
-- which would cost a settings save and restore per call) inherit these settings, except
-- that queue._scan and
-- queue._candidates keep custom plans: a generic plan costs their filter on the excluded
-- categories so low that it would sort the gated backlog instead of reading its index in
-- order.
-- queue._claim's return type was a table of its own before migration 0054 (queue.claimed):
-- a function's return type cannot be replaced in place.
do $$
begin
    if (select p.prorettype <> 'queue.claimed'::regtype from pg_catalog.pg_proc as p
        where p.oid = to_regprocedure('queue._claim(text, text[], int, interval)')) then
        drop function queue._claim(text, text[], int, interval);
    end if;
end
$$;

create or replace function queue._claim(
    worker text,
    queues text[],
    batch int,
    lease interval
) returns setof queue.claimed
language plpgsql
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
rows 10
as $$
declare
    v_name text;
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

    if _claim.queues is null or cardinality(_claim.queues) = 1 then
        return query select * from queue._claim_direct(
            _claim.worker, _claim.queues[1], _claim.batch, _claim.lease, v_now);
        if found then
            return;
        end if;
    end if;
    return query select * from queue._claim_general(
        _claim.worker, _claim.queues, _claim.batch, _claim.lease, v_now);
end
$$;

-- _claim_direct: the direct path of queue._claim, for every queue (queue_name null) or one
-- queue: when no lease of the scope has expired, no ready job of the scope has a category
-- and no queue of it is paused, the best `batch` jobs are the best ungated ones. One
-- statement: one index scan in claim order picks and locks them (SKIP LOCKED; its LIMIT
-- stops it, so it locks only the rows it returns) and the update leases them. Its probes
-- are evaluated first; when one finds a row nothing is scanned nor locked, and it claims
-- nothing (queue._claim then takes the general path, as it does when no job is ready).
-- The lease formula is a deliberate copy of queue._lease_taken's, inside the one statement
-- that picks and leases (a call per row would cost more than the formula);
-- sql/tests/queue/claim/direct_and_general_lease_alike.sql proves the two agree.
-- One queue: its scans say `queue = q and queue >= q and queue <= q` (the same rows; the
-- equality prunes the shards). With `queue = q` alone, the generic plan (made once for any
-- queue) estimated the queue at 1/n_distinct of the rows, all of them when the statistics
-- knew one queue, and walked the queue-less claim index through every other queue's backlog;
-- the range lowers the estimate, so a (queue, priority, ...) index is read
-- (tests/test_claim_plan_small_queue.py). queue/_candidates.sql does the same.
create or replace function queue._claim_direct(
    worker text, queue_name text, batch int, lease interval, v_now timestamptz
) returns setof queue.claimed
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if _claim_direct.queue_name is null then
        return query
        with claimed as (
            update queue.jobs as j
            set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
                worker = _claim_direct.worker, claimed_at = v_now,
                lease_expires_at = least(v_now + coalesce(
                    _claim_direct.lease,
                    (select q.lease from queue.queues as q where q.queue = j.queue),
                    queue._lease_default()), v_now + j.timeout)
            where j.id = any (array(
                    select c.id from queue.jobs as c
                    where c.status = 'pending' and c.category is null
                      and c.available_at <= now()
                    order by c.priority desc, c.available_at, c.id
                    limit _claim_direct.batch
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
        return;
    end if;
    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = _claim_direct.worker, claimed_at = v_now,
            lease_expires_at = least(v_now + coalesce(
                _claim_direct.lease,
                (select q.lease from queue.queues as q where q.queue = _claim_direct.queue_name),
                queue._lease_default()), v_now + j.timeout)
        where j.id = any (array(
                select c.id from queue.jobs as c
                where c.queue = _claim_direct.queue_name
                  and c.queue >= _claim_direct.queue_name and c.queue <= _claim_direct.queue_name
                  and c.status = 'pending' and c.category is null
                  and c.available_at <= now()
                order by c.priority desc, c.available_at, c.id
                limit _claim_direct.batch
                for update skip locked))
          and j.queue = _claim_direct.queue_name
          and (select x.lease_expires_at from queue.jobs as x
               where x.queue = _claim_direct.queue_name
                 and x.status = 'running' and x.lease_expires_at <= v_now
               order by x.lease_expires_at limit 1) is null
          and (select g.id from queue.jobs as g
               where g.queue = _claim_direct.queue_name
                 and g.queue >= _claim_direct.queue_name and g.queue <= _claim_direct.queue_name
                 and g.status = 'pending' and g.category is not null
                 and g.available_at <= now()
               order by g.priority desc, g.available_at, g.id limit 1) is null
          and (select p.queue from queue.queues as p
               where p.paused and p.queue = _claim_direct.queue_name) is null
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt,
            j.max_attempts, j.token, j.lease_expires_at, j.enqueued_at, j.cache_key,
            j.cache_version, j.available_at, v_now + j.timeout as deadline
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
end
$$;

-- _claim_general: the general path of queue._claim: several queues, or the direct path
-- claimed nothing (a lease expired, a gated job is ready, a queue is paused, or no job is
-- ready: the direct statement cannot tell which, and what its probes saw may have changed
-- since). Paused queues left out, expired leases taken back, the best candidates found and
-- locked (queue._candidates), the categorised ones gated (queue._gate), the rest leased
-- (queue._lease_taken).
create or replace function queue._claim_general(
    worker text, queues text[], batch int, lease interval, v_now timestamptz
) returns setof queue.claimed
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_exclude text[];
    v_ids bigint[];
    v_cats text[];
    v_take bigint[];
begin
    -- Paused queues are left out: a claim of every queue becomes one of the queues not
    -- paused whose ready jobs can be among its best (queue._unpaused_queues; expired leases
    -- of the other queues are then taken back by their own claims or queue.maintain).
    if (select p.queue from queue.queues as p where p.paused limit 1) is not null then
        queues := queue._unpaused_queues(_claim_general.queues, _claim_general.batch);
        if cardinality(_claim_general.queues) = 0 then
            return;
        end if;
    end if;

    -- Take back expired leases first (an index probe when there are none).
    if _claim_general.queues is null then
        if (select x.lease_expires_at from queue.jobs as x
            where x.status = 'running' and x.lease_expires_at <= v_now
            order by x.lease_expires_at limit 1) is not null then
            perform queue._reap(100);
        end if;
    elsif exists (
        select from unnest(_claim_general.queues) as q (name)
        where (select x.lease_expires_at from queue.jobs as x
               where x.queue = q.name
                 and x.status = 'running' and x.lease_expires_at <= v_now
               order by x.lease_expires_at limit 1) is not null
    ) then
        perform queue._reap(100, _claim_general.queues);
    end if;

    -- Categories that cannot take a job now: paused, or as many live slots as their limit
    -- (a slot whose lease expired is not live, whichever queue its job is in).
    v_exclude := queue._full_categories(v_now);
    select  -- the best `batch` candidates, locked; those with a category gated
        array_agg(c.id order by c.priority desc, c.available_at, c.id),
        array_agg(c.category order by c.priority desc, c.available_at, c.id)
    into v_ids, v_cats
    from queue._candidates(_claim_general.queues, _claim_general.batch, v_exclude, '{}') as c;
    if v_ids is null then
        return;
    end if;
    if cardinality(array_remove(v_cats, null)) = 0 then
        v_take := v_ids;
    else
        v_take := queue._gate(_claim_general.worker, _claim_general.queues,
            _claim_general.batch, v_ids, v_cats, v_exclude, v_now);
    end if;
    return query select * from queue._lease_taken(
        _claim_general.worker, v_take, _claim_general.lease, v_now);
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
revoke all on function queue._claim_direct(text, text, int, interval, timestamptz) from public;
revoke all on function queue._claim_general(text, text[], int, interval, timestamptz) from public;

comment on function queue.claim(text, text[], int, interval) is
'Lease up to batch ready jobs to a worker (SKIP LOCKED, category-gated, fenced by a token).';
revoke all on function queue.claim(text, text[], int, interval) from public;
grant execute on function queue.claim(text, text[], int, interval) to andal_worker, andal_admin;
