-- The category gate's private pieces: category ids, the slot of a job, which categories
-- are full, and the gate of a claim's candidates (queue._gate: the categories' row locks,
-- the slots filled, in rounds). Private: granted to nobody.

-- _category_id: the id of a category, created (limit 1) on first use. By its unique index
-- whatever the statistics say: after the table was vacuumed empty, a sequential scan looks
-- cheapest, and thousands of new names in one transaction made each lookup read them all.
create or replace function queue._category_id(category_name text) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_id bigint;
begin
    select c.id into v_id from queue.categories as c where c.category = category_name;
    if v_id is null then
        insert into queue.categories as c (category) values (category_name)
        on conflict (category) do nothing;
        select c.id into v_id from queue.categories as c where c.category = category_name;
    end if;
    return v_id;
end
$$;

-- The category gate locks the category's row now (see queue.claim); the advisory key that
-- any role could take is gone.
drop function if exists queue._gate_key(bigint);
-- _free_slots: free the category slots of job_ids (their rows in queue.worker_locks; by
-- primary key; queues[i] is the queue of job_ids[i]). Every path that ends or gives back a
-- gated job's attempt calls it. When a category was full before this free (claimers of it
-- were turned away), the queue of each freed job gets the ready hint (queue._notify_ready),
-- so its workers need not wait for their poll; a hint, as every notification: a listener
-- claims and may find nothing. A queue that shares the category but had no slot freed here
-- learns by its own poll or queue.next_available. The one-job form (complete, fail,
-- release, cancel, take-back) is three primary-key or index probes, so the hint costs a
-- gated completion next to nothing (a pgbench drain of 1,000 categories of limit 1 ran
-- within the noise of a plain delete).
drop function if exists queue._free_slots(bigint[]);
create or replace function queue._free_slots(job_ids bigint[], queues text[]) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_cat bigint;
    v_max int;
    v_queue text;
begin
    if cardinality(_free_slots.job_ids) = 1 then
        delete from queue.worker_locks as w where w.job_id = _free_slots.job_ids[1]
        returning w.category_id into v_cat;
        if v_cat is not null then
            select c.max_running into v_max from queue.categories as c where c.id = v_cat;
            -- full before this free: the slots left, and the one just freed
            if v_max > 0 and (select count(*) from queue.worker_locks as w
                              where w.category_id = v_cat) + 1 >= v_max then
                perform queue._notify_ready(_free_slots.queues[1]);
            end if;
        end if;
        return;
    end if;
    for v_queue in
        with freed as (
            delete from queue.worker_locks as w where w.job_id = any (_free_slots.job_ids)
            -- each freed slot's limit by primary key (a join let the planner hash every
            -- category: a read that grew with the number of categories)
            returning w.job_id, w.category_id, (
                select c.max_running from queue.categories as c where c.id = w.category_id
            ) as max_running
        )
        select distinct q.queue
        from freed as f
        join unnest(_free_slots.job_ids, _free_slots.queues) as q (job_id, queue)
            on q.job_id = f.job_id
        where f.max_running > 0
            -- full before this free: the statement's snapshot still holds the freed slots
            and (select count(*) from queue.worker_locks as w
                 where w.category_id = f.category_id) >= f.max_running
    loop
        perform queue._notify_ready(v_queue);
    end loop;
end
$$;

-- _full_categories: the categories a claim at `at` (the database's current time) cannot take
-- a job of: paused ones (max_running 0), and those with as many live slots as their limit.
-- A slot whose job's lease expired is not live: it never holds its category against claims
-- of other queues until its own queue is reaped. Only categories whose slot rows reach the
-- limit are checked against the leases (a probe per slot), so the common case reads the
-- slot counts alone. PL/pgSQL, not SQL: a SQL function with a SET clause is never inlined, and
-- its plan, kept by the calling expression for the transaction, would not see
-- queue.set_shards replace the partitions.
create or replace function queue._full_categories(at timestamptz) returns text []
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    return (select coalesce(array_agg(f.category), '{}')
    from (
        select c.category from queue.categories as c where c.max_running = 0
        union all
        select c.category
        from (select w.category_id, count(*) as n from queue.worker_locks as w group by 1) as r
        join queue.categories as c on c.id = r.category_id
        where r.n >= c.max_running and c.max_running > 0
          and (select count(*) from queue.worker_locks as w
               join queue.jobs as j on j.id = w.job_id
               where w.category_id = c.id and j.lease_expires_at > _full_categories.at)
              >= c.max_running
    ) as f);
end
$$;

-- _gate: the category gate of a claim's candidates (`ids` in claim order, `cats` their
-- categories, `exclude` the categories that cannot take a job), every category of the
-- batch at once: one statement try-locks the rows of the categories not locked yet
-- (queue._gate_lock: a row another transaction holds skips its category for this call),
-- then one statement recounts the live slots of the locked categories (its snapshot is
-- taken after the locks: it sees every slot of a claim that held a lock before) and writes
-- the slots taken (queue._gate_take). A category that runs out of slots (or whose lock is
-- busy) is left out and the batch is filled from further candidates, in rounds. Returns the
-- jobs to lease: the ungated candidates and the gated ones given a slot. The locks are held
-- to the end of the transaction; the attempts and refusals go to queue.lock_stats, the
-- starts of rate-limited categories to their window (queue._rate_record).
create or replace function queue._gate(
    worker text, queues text[], batch int, ids bigint[], cats text[], exclude text[],
    v_now timestamptz
) returns bigint[]
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_take bigint[] := '{}'::bigint[];
    v_new text[];
    v_lock record;
    v_round record;
    v_dropped boolean;
    -- the categories this claim holds locked: name, id, limit, starts left, slots taken
    v_lk_names text[] := '{}'::text[];
    v_lk_ids bigint[] := '{}'::bigint[];
    v_lk_max int[] := '{}'::int[];
    v_lk_rate int[] := '{}'::int[];
    v_lk_taken int[] := '{}'::int[];
    v_stat_ids bigint[] := '{}'::bigint[];
    v_stat_fail bigint[] := '{}'::bigint[];
    v_rate_refused bigint[] := '{}'::bigint[];
    v_rated boolean := false;
begin
    for v_r in 1 .. 8 loop
        v_dropped := false;
        v_take := v_take || array(
            select c.id from unnest(ids, cats) as c (id, cat) where c.cat is null);
        v_new := array(
            select distinct c.cat from unnest(cats) as c (cat)
            where c.cat is not null and c.cat <> all (v_lk_names));
        if cardinality(v_new) > 0 then
            select * into v_lock from queue._gate_lock(v_new, v_now);
            v_rated := v_rated or v_lock.rated;
            v_stat_ids := v_stat_ids || v_lock.refused_ids || v_lock.ids;
            v_stat_fail := v_stat_fail
                || array_fill(1::bigint, array[cardinality(v_lock.refused_ids)])
                || array_fill(0::bigint, array[cardinality(v_lock.ids)]);
            exclude := exclude || v_lock.refused;
            v_dropped := cardinality(v_lock.refused) > 0;
            v_lk_names := v_lk_names || v_lock.names;
            v_lk_ids := v_lk_ids || v_lock.ids;
            v_lk_max := v_lk_max || v_lock.maxes;
            v_lk_rate := v_lk_rate || v_lock.rates;
            v_lk_taken := v_lk_taken || array_fill(0, array[cardinality(v_lock.ids)]);
        end if;
        select * into v_round from queue._gate_take(worker, ids, cats, v_take, v_lk_names,
            v_lk_ids, v_lk_max, v_lk_rate, v_now);
        v_take := v_take || v_round.taken;
        -- no slot left: the category's other candidates go back, it is left out
        exclude := exclude || v_round.filled;
        v_dropped := v_dropped or v_round.dropped;
        v_rate_refused := v_rate_refused || v_round.rate_refused;
        for v_i in 1 .. cardinality(v_round.ords) loop
            v_lk_taken[v_round.ords[v_i]] := v_lk_taken[v_round.ords[v_i]] + v_round.counts[v_i];
            v_lk_rate[v_round.ords[v_i]] := v_lk_rate[v_round.ords[v_i]] - v_round.counts[v_i];
        end loop;
        exit when not v_dropped or cardinality(v_take) >= batch;
        select array_agg(c.id order by c.priority desc, c.available_at, c.id),
            array_agg(c.category order by c.priority desc, c.available_at, c.id)
        into ids, cats
        from queue._candidates(queues, batch - cardinality(v_take), exclude, v_take) as c;
        exit when ids is null;
    end loop;

    insert into queue.lock_stats as s (minute, backend, category_id, attempts, failures,
        rate_refusals)
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
    return v_take;
end
$$;

-- _gate_lock: try-lock the rows of `categories` (FOR NO KEY UPDATE SKIP LOCKED, to the end
-- of the transaction) and read each one's limit and the starts its rate limit leaves, under
-- the lock. The gate lock is a row lock on the category's row, not an advisory lock: any
-- role that can connect can take any advisory key (and read the held ones in pg_locks), but
-- only andal's roles can lock this row. A category without a row gets one (limit 1), then
-- its lock. Returns the locked ones (names, ids, maxes, rates; rated: one has a rate limit)
-- and the refused ones (refused, refused_ids: another claimer holds the row).
create or replace function queue._gate_lock(
    categories text[], v_now timestamptz,
    out names text[], out ids bigint[], out maxes int[], out rates int[], out rated boolean,
    out refused text[], out refused_ids bigint[]
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_cat text;
    v_cat_id bigint;
    v_max int;
    v_rate_left int;
begin
    select coalesce(array_agg(k.category), '{}'), coalesce(array_agg(k.id), '{}'),
        coalesce(array_agg(k.max_running), '{}'), coalesce(array_agg(k.rate_left), '{}'),
        coalesce(bool_or(k.rate_left is not null), false)
    into names, ids, maxes, rates, rated
    from (
        select c.id, c.category, c.max_running,
            case when c.rate_starts is not null then queue._rate_left(
                c.rate_log, c.rate_starts, c.rate_per, v_now) end as rate_left
        from queue.categories as c
        where c.category = any (_gate_lock.categories)
        for no key update skip locked
    ) as k;
    refused := '{}';
    refused_ids := '{}';
    if cardinality(names) = cardinality(_gate_lock.categories) then
        return;
    end if;
    -- not locked: busy (another claimer holds the row), or no row yet
    select coalesce(array_agg(c.category), '{}'), coalesce(array_agg(c.id), '{}')
    into refused, refused_ids
    from queue.categories as c
    where c.category = any (_gate_lock.categories) and c.category <> all (names);
    for v_cat in
        select n.cat from unnest(_gate_lock.categories) as n (cat)
        where n.cat <> all (names) and n.cat <> all (refused)
    loop
        v_cat_id := queue._category_id(v_cat);
        select c.max_running, queue._rate_left(c.rate_log, c.rate_starts, c.rate_per, v_now)
        into v_max, v_rate_left
        from queue.categories as c
        where c.id = v_cat_id
        for no key update skip locked;
        if found then
            names := names || v_cat;
            ids := ids || v_cat_id;
            maxes := maxes || v_max;
            rates := rates || v_rate_left;
            rated := rated or v_rate_left is not null;
        else
            refused := refused || v_cat;
            refused_ids := refused_ids || v_cat_id;
        end if;
    end loop;
end
$$;

-- _gate_take: one round of the gate, under the locks: each locked category's free slots
-- (its limit less its live slots, this claim's own `take` included; no more than its rate
-- window has left), its candidates taken in claim order up to that, their slots written in
-- one insert. Returns the jobs given a slot (taken), the categories now full (filled),
-- whether a full one left candidates behind (dropped), the rate-limited ones that refused
-- (rate_refused), and per locked category that took jobs its position in the lock arrays
-- (ords) and how many it took (counts).
create or replace function queue._gate_take(
    worker text, ids bigint[], cats text[], take bigint[], lk_names text[], lk_ids bigint[],
    lk_max int[], lk_rate int[], v_now timestamptz,
    out taken bigint[], out filled text[], out dropped boolean, out rate_refused bigint[],
    out ords int[], out counts int[]
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    with cand as materialized (
        select c.id, c.cat, c.n
        from unnest(_gate_take.ids, _gate_take.cats) with ordinality as c (id, cat, n)
        where c.cat = any (_gate_take.lk_names)
    ),
    room as materialized (
        select k.name, k.id, k.ord, k.rate, s.slots,
            greatest(least(s.slots, coalesce(k.rate, s.slots)), 0) as free
        from unnest(_gate_take.lk_names, _gate_take.lk_ids, _gate_take.lk_max,
            _gate_take.lk_rate) with ordinality as k (name, id, max, rate, ord)
        cross join lateral (
            select k.max - count(*) as slots
            from queue.worker_locks as w
            join queue.jobs as j on j.id = w.job_id
            where w.category_id = k.id
              and (j.lease_expires_at > v_now or j.id = any (_gate_take.take))
        ) as s
        where k.name = any (_gate_take.cats)
    ),
    took as (
        insert into queue.worker_locks (job_id, category_id, worker)
        select r.id, r.cat_id, _gate_take.worker
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
            select t.category_id, count(*) as n from took as t group by t.category_id
        ) as t on t.category_id = k.id
    )
    select coalesce((select array_agg(t.job_id) from took as t), '{}'),
        coalesce(array_agg(p.name) filter (where p.n_taken >= p.free), '{}'),
        coalesce(bool_or(p.n_taken >= p.free and p.n_cand > p.n_taken), false),
        coalesce(array_agg(p.id) filter (where p.rate < p.slots), '{}'),
        coalesce(array_agg(p.ord::int) filter (where p.n_taken > 0), '{}'),
        coalesce(array_agg(p.n_taken::int) filter (where p.n_taken > 0), '{}')
    into taken, filled, dropped, rate_refused, ords, counts
    from per as p;
end
$$;

revoke all on function queue._category_id(text) from public;
revoke all on function queue._free_slots(bigint[], text[]) from public;
revoke all on function queue._full_categories(timestamptz) from public;
revoke all on function queue._gate(text, text[], int, bigint[], text[], text[], timestamptz)
from public;
revoke all on function queue._gate_lock(text[], timestamptz) from public;
revoke all on function queue._gate_take(
    text, bigint[], text[], bigint[], text[], bigint[], int[], int[], timestamptz
) from public;
