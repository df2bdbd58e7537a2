-- The candidate scans of queue.claim's general path (several queues, gated jobs, expired
-- leases): queue._candidates and the scans it calls. Private: called only by queue.claim.
-- A scan of one queue says `j.queue = queues[1] and j.queue >= queues[1] and j.queue <=
-- queues[1]`, so that a generic plan reads a (queue, priority, ...) index and never another
-- queue's backlog (the equality prunes the shards): see queue._claim_direct.

-- _gated_scan: the best `lim` ready gated jobs of `queues` (null: every queue) outside
-- exclude_categories (not empty: otherwise _scan reads jobs_gated_idx in order), locked FOR
-- UPDATE SKIP LOCKED, leaving out the ids in exclude_ids.
-- First the head: for every queue or one queue, the first few ready gated jobs in claim order
-- (a few times `lim`, read from jobs_gated_idx or jobs_gated_queue_idx without locking), of
-- which those outside the left-out categories are locked. When that gives `lim` jobs, they
-- are the best `lim` (every job past the head comes later in claim order). Otherwise (the
-- head is mostly left-out categories: a full category's long backlog at the top) the
-- (queue, category) pairs that have pending gated jobs are enumerated by a skip scan of
-- jobs_gated_pair_idx (one index probe per pair), and each pair not left out gives its best
-- `lim` jobs (queue._gated_pairs): the cost follows the number of such pairs, never the
-- backlog of the categories left out. The head keeps the common case (many categories, a
-- few of them full) from paying a probe and up to `lim` row locks per pair (1,000
-- categories: about 1,000 probes and 10,000 locks per claim). Each pair's scan locks up to
-- `lim` rows, and the head's locks are kept when the pairs are read: the caller
-- (queue._candidates) gives back the extra locks. Called by queue._scan (every queue) and
-- queue._scan_queues (listed queues).
create or replace function queue._gated_scan(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[]
) returns table (id bigint, category text, priority int, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
-- the head is read in index order, whatever the statistics say (never a bitmap scan and a
-- sort of the gated backlog)
set enable_bitmapscan = off
rows 10
as $$
#variable_conflict use_column
declare
    v_head int := 4 * lim + 2 * coalesce(cardinality(exclude_categories), 0) + 16;
    v_head_ids bigint[];
    v_ids bigint[];
begin
    -- the head, read without locking (in index order: the function reads no bitmap)
    if queues is null then
        v_head_ids := array(
            select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is not null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id
            limit v_head);
    elsif cardinality(queues) = 1 then
        v_head_ids := array(
            select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is not null
              and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id
            limit v_head);
    end if;
    if v_head_ids is not null then
        -- its jobs outside the left-out categories, locked by primary key (re-checked on the
        -- row locked), the best lim of them kept
        v_ids := array(
            select x.id from (
                select j.id, j.priority, j.available_at from queue.jobs as j
                where j.id = any (v_head_ids)
                  -- (coalesce: no partial index of pending jobs can serve this statement,
                  -- so it is the primary key's probes, never a walk of the gated backlog)
                  and coalesce(j.status, '') = 'pending'
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                for update skip locked
            ) as x
            order by x.priority desc, x.available_at, x.id
            limit lim);
    end if;
    if cardinality(v_ids) >= lim then
        return query
        select j.id, j.category, j.priority, j.available_at from queue.jobs as j
        where j.id = any (v_ids) and (queues is null or j.queue = queues[1])
        order by j.priority desc, j.available_at, j.id;
        return;
    end if;

    -- the head is mostly left-out categories: per (queue, category) pair
    return query
    select p.id, p.category, p.priority, p.available_at
    from queue._gated_pairs(queues, lim, exclude_categories, exclude_ids) as p;
end
$$;

-- _gated_pairs: queue._gated_scan's second step, when the head of the gated index did not
-- give `lim` jobs (mostly left-out categories: a full category's long backlog at the top).
-- The (queue, category) pairs that have pending gated jobs of `queues` (null: every queue)
-- are enumerated by a skip scan of jobs_gated_pair_idx (one index probe per pair), and each
-- pair outside exclude_categories gives its best `lim` ready jobs outside exclude_ids,
-- locked FOR UPDATE SKIP LOCKED; the best `lim` of them are returned. Each pair's scan locks
-- up to `lim` rows (the caller, queue._candidates, gives back the extra locks). Called only
-- by queue._gated_scan, whose planner settings it runs with (custom plans, no bitmap scan).
create or replace function queue._gated_pairs(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[]
) returns table (id bigint, category text, priority int, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
rows 10
as $$
#variable_conflict use_column
begin
    return query
    -- Pairs in the order of the index's expression, array[queue, category]. Listed
    -- queues: each queue's first pair (array[queue, ''] sorts before its first category),
    -- then the next pairs while the queue stays the same.
    with recursive pairs (queue, category) as (
        select f.queue, f.category
        from (select distinct q.name from unnest(queues) as q (name)) as q
        cross join lateral (
            select j.queue, j.category from queue.jobs as j
            where array[j.queue, j.category] >= array[q.name, '']
              and j.status = 'pending' and j.category is not null
            order by array[j.queue, j.category]
            limit 1
        ) as f
        where queues is not null and f.queue = q.name
        union all
        (select f.queue, f.category from (
            select j.queue, j.category from queue.jobs as j
            where j.status = 'pending' and j.category is not null
            order by array[j.queue, j.category]
            limit 1
        ) as f where queues is null)
        union all
        select n.queue, n.category
        from pairs as p
        cross join lateral (
            select j.queue, j.category from queue.jobs as j
            where array[j.queue, j.category] > array[p.queue, p.category]
              and j.status = 'pending' and j.category is not null
            order by array[j.queue, j.category]
            limit 1
        ) as n
        where queues is null or n.queue = p.queue
    )
    select h.id, h.category, h.priority, h.available_at
    from pairs as p
    cross join lateral (
        select j.id, j.category, j.priority, j.available_at from queue.jobs as j
        where array[j.queue, j.category] = array[p.queue, p.category]
          and j.status = 'pending' and j.category is not null and j.available_at <= now()
          and j.id <> all (exclude_ids)
        order by j.priority desc, j.available_at, j.id
        limit lim
        for update skip locked
    ) as h
    where p.category <> all (exclude_categories)
    order by h.priority desc, h.available_at, h.id
    limit lim;
end
$$;

-- _gated_head: when the scope (every queue, or one queue) has no ready job without a
-- category, its best `lim` ready gated jobs outside exclude_categories and exclude_ids,
-- locked FOR UPDATE SKIP LOCKED, and only they. With nothing left out, the gated index is
-- read in claim order and locked in one statement (its LIMIT stops the locking). Otherwise
-- the head of the gated index (its first 4 * lim + 2 * (categories left out) + 16 jobs in
-- claim order, read without locking: queue._gated_head_read) is filtered, and its jobs are
-- locked in claim order by primary key, the locking stopping at `lim`. As arrays in claim
-- order (ids, categories, priorities, availabilities); null when the head cannot decide
-- (the scope has ready ungated jobs, or the head was full and fewer than `lim` of its jobs
-- are outside the left-out categories: a full category's backlog at the top), having
-- locked nothing: the caller then scans (queue._scan). Every statement reads an index in
-- order or probes by primary key, so it keeps its generic plan (no planning per call, no
-- subtransaction: it never locks a row it does not return).
create or replace function queue._gated_head(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[],
    out ids bigint[], out categories text[], out priorities int[],
    out availabilities timestamptz[]
)
language plpgsql
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
as $$
#variable_conflict use_column
declare
    v_head int := 4 * lim + 2 * coalesce(cardinality(exclude_categories), 0) + 16;
    v_all boolean := coalesce(cardinality(exclude_categories), 0) = 0
        and coalesce(cardinality(exclude_ids), 0) = 0;
    v_read record;
begin
    if queues is null then
        if (select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1) is not null then
            return;
        end if;
        if v_all then
            -- nothing left out: the gated index in claim order, locking stops at lim
            select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.category), '{}'),
                coalesce(array_agg(x.priority), '{}'), coalesce(array_agg(x.available_at), '{}')
            into ids, categories, priorities, availabilities
            from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as x;
            return;
        end if;
    elsif cardinality(queues) = 1 then
        if (select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1) is not null then
            return;
        end if;
        if v_all then
            select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.category), '{}'),
                coalesce(array_agg(x.priority), '{}'), coalesce(array_agg(x.available_at), '{}')
            into ids, categories, priorities, availabilities
            from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as x;
            return;
        end if;
    else
        return;
    end if;
    -- the head, read without locking: how many jobs it read, which of them are candidates
    v_read := queue._gated_head_read(queues, v_head, exclude_categories, exclude_ids);
    if v_read.n >= v_head and coalesce(cardinality(v_read.ids), 0) < lim then
        return;
    end if;
    -- locked in claim order (the LIMIT stops the locking), re-checked on the row locked
    -- (coalesce: no partial index of pending jobs can serve this statement, so it is the
    -- primary key's probes)
    select coalesce(array_agg(x.id order by x.priority desc, x.available_at, x.id), '{}'),
        coalesce(array_agg(x.category order by x.priority desc, x.available_at, x.id), '{}'),
        coalesce(array_agg(x.priority order by x.priority desc, x.available_at, x.id), '{}'),
        coalesce(array_agg(x.available_at order by x.priority desc, x.available_at, x.id),
            '{}')
    into ids, categories, priorities, availabilities
    from (
        select j.id, j.category, j.priority, j.available_at from queue.jobs as j
        where j.id = any (v_read.ids)
          and coalesce(j.status, '') = 'pending' and j.available_at <= now()
        order by j.priority desc, j.available_at, j.id
        limit lim
        for update skip locked
    ) as x;
end
$$;

-- _gated_head_read: queue._gated_head's head of the gated index, read without locking: its
-- first `head` ready gated jobs in claim order, of every queue (queues null) or of one queue,
-- from jobs_gated_idx or jobs_gated_queue_idx in order. Returns how many it read (n) and, in
-- claim order, the ids of those outside exclude_categories and exclude_ids (ids; null when
-- none is). Called only by queue._gated_head, whose planner settings it runs with (generic
-- plans, no sequential or bitmap scan).
create or replace function queue._gated_head_read(
    queues text[], head int, exclude_categories text[], exclude_ids bigint[],
    out n int, out ids bigint[]
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if queues is null then
        select count(*), array_agg(h.id order by h.n)
            filter (where h.category <> all (exclude_categories) and h.id <> all (exclude_ids))
        into n, ids
        from (
            select j.id, j.category, row_number() over () as n from (
                select j.id, j.category from queue.jobs as j
                where j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit head
            ) as j
        ) as h;
    else
        select count(*), array_agg(h.id order by h.n)
            filter (where h.category <> all (exclude_categories) and h.id <> all (exclude_ids))
        into n, ids
        from (
            select j.id, j.category, row_number() over () as n from (
                select j.id, j.category from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit head
            ) as j
        ) as h;
    end if;
end
$$;

-- _scan: the best `lim` ready jobs of `queues` (null: every queue), locked FOR UPDATE SKIP
-- LOCKED, leaving out the categories in exclude_categories and the ids in exclude_ids.
-- Ungated and gated jobs are read from their own partial indexes; for listed queues, each
-- queue's index is read on its own (an index scan per queue and kind, never a sort of the
-- backlog) and the queues share the batch round-robin within a priority level
-- (queue._scan_queues). Each scan locks up to `lim` rows: rows locked but not among the
-- best stay locked until the transaction (or subtransaction) ends. One static statement per
-- case (every queue, one queue, here; listed queues sharing the batch, in
-- queue._scan_queues): each has one simple plan, made once per session. Called only by
-- queue._candidates.
create or replace function queue._scan(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[]
) returns table (id bigint, category text, priority int, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
-- custom plans, although claim forces generic ones: see queue.claim
set plan_cache_mode = auto
rows 10
as $$
#variable_conflict use_column
begin
    -- Several queues, or one with categories left out: each listed queue read on its own,
    -- the queues sharing the batch round-robin (queue._scan_queues).
    if queues is not null
       and (cardinality(exclude_categories) > 0 or cardinality(queues) <> 1) then
        return query
        select s.id, s.category, s.priority, s.available_at
        from queue._scan_queues(queues, lim, exclude_categories, exclude_ids) as s;
        return;
    end if;
    -- Categories left out: their backlog may be long, so the gated jobs come from
    -- queue._gated_scan (per category), never from a walk of jobs_gated_idx past them.
    if cardinality(exclude_categories) > 0 and queues is null then
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
            union all
            select g.id, g.category, g.priority, g.available_at
            from queue._gated_scan(queues, lim, exclude_categories, exclude_ids) as g
        ) as c
        order by c.priority desc, c.available_at, c.id
        limit lim;
        return;
    end if;
    if queues is null then
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
            union all
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
        ) as c
        order by c.priority desc, c.available_at, c.id
        limit lim;
    elsif cardinality(queues) = 1 then
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
            union all
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
        ) as c
        order by c.priority desc, c.available_at, c.id
        limit lim;
    end if;
end
$$;

-- _scan_queues: queue._scan's forms for listed queues that share the batch (several queues,
-- or one queue with categories left out): each queue's index is read on its own, an index
-- scan per queue and kind (never a sort of the backlog), locking up to `lim` rows each;
-- within a priority level the queues take the batch round-robin. Categories left out: the
-- gated jobs come from queue._gated_scan (per category), never from a walk of a gated index
-- past their backlog. Called only by queue._scan, whose planner settings (custom plans) it
-- runs with.
create or replace function queue._scan_queues(
    queues text[], lim int, exclude_categories text[], exclude_ids bigint[]
) returns table (id bigint, category text, priority int, available_at timestamptz)
language plpgsql
set search_path = pg_catalog, pg_temp
rows 10
as $$
#variable_conflict use_column
begin
    if cardinality(exclude_categories) > 0 then
        -- (the gated jobs per category, from queue._gated_scan; round-robin as below)
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select b.id, b.category, b.priority, b.available_at, q.name as queue
            from (select distinct q.name from unnest(queues) as q (name)) as q
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
            select g.id, g.category, g.priority, g.available_at,
                case when cardinality(queues) = 1 then queues[1]
                     else (select j.queue from queue.jobs as j where j.id = g.id) end
            from queue._gated_scan(queues, lim, exclude_categories, exclude_ids) as g
        ) as c
        order by c.priority desc,
            row_number() over (
                partition by c.queue, c.priority order by c.available_at, c.id),
            random()
        limit lim;
    else
        -- Several queues share the batch fairly: within a priority level, round-robin over
        -- the queues with ready jobs (each queue's best, then each one's second best, ...;
        -- within a round the queues come in random order, so batches of one alternate too).
        -- A higher priority still goes first, and each queue keeps its own order.
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select b.id, b.category, b.priority, b.available_at, q.name as queue
            from (select distinct q.name from unnest(queues) as q (name)) as q
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
            select b.id, b.category, b.priority, b.available_at, q.name
            from (select distinct q.name from unnest(queues) as q (name)) as q
            cross join lateral (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as b
        ) as c
        order by c.priority desc,
            row_number() over (
                partition by c.queue, c.priority order by c.available_at, c.id),
            random()
        limit lim;
    end if;
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
-- custom plans, although claim forces generic ones: see queue.claim
set plan_cache_mode = auto
rows 10
as $$
#variable_conflict use_column
declare
    v_best bigint[];
    v_mixed boolean;
    v_head record;
begin
    -- Only gated jobs ready (every queue or one queue): their best `lim` from the head of
    -- the gated index, locked exactly (queue._gated_head), when it decides.
    if queues is null or cardinality(queues) = 1 then
        v_head := queue._gated_head(queues, lim, exclude_categories, exclude_ids);
        if v_head.ids is not null then
            return query
            select h.id, h.category, h.priority, h.available_at
            from unnest(v_head.ids, v_head.categories, v_head.priorities,
                v_head.availabilities) as h (id, category, priority, available_at);
            return;
        end if;
    end if;
    -- Each probe follows its claim index's order and reads one index entry (an EXISTS
    -- drops the ORDER BY and may be planned as a sequential scan).
    if cardinality(exclude_categories) > 0 then
        -- the gated scan reads one index per category: it may over-lock (no probe walks
        -- past the backlog of the categories left out)
        v_mixed := true;
    elsif queues is null then
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
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null and (
            select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
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

comment on function queue._gated_scan(text[], int, text[], bigint[]) is
'Private: the best ready gated jobs outside some categories, per (queue, category), locked.';
comment on function queue._gated_pairs(text[], int, text[], bigint[]) is
'Private: queue._gated_scan per (queue, category) pair, when the head did not decide.';
comment on function queue._gated_head(text[], int, text[], bigint[]) is
'Private: the best ready gated jobs from the head of the gated index, locked exactly.';
comment on function queue._gated_head_read(text[], int, text[], bigint[]) is
'Private: the head of the gated index, read without locking, for queue._gated_head.';
comment on function queue._scan(text[], int, text[], bigint[]) is
'Private: the best ready jobs, locked SKIP LOCKED, by partial index.';
comment on function queue._scan_queues(text[], int, text[], bigint[]) is
'Private: queue._scan of listed queues, each read on its own, sharing the batch round-robin.';
comment on function queue._candidates(text[], int, text[], bigint[]) is
'Private: queue._scan holding locks on the returned rows only.';
revoke all on function queue._gated_scan(text[], int, text[], bigint[]) from public;
revoke all on function queue._gated_pairs(text[], int, text[], bigint[]) from public;
revoke all on function queue._gated_head(text[], int, text[], bigint[]) from public;
revoke all on function queue._gated_head_read(text[], int, text[], bigint[]) from public;
revoke all on function queue._scan(text[], int, text[], bigint[]) from public;
revoke all on function queue._scan_queues(text[], int, text[], bigint[]) from public;
revoke all on function queue._candidates(text[], int, text[], bigint[]) from public;
