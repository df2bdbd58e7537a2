-- Queue statistics: the bookkeeping written when an attempt ends, and the read side
-- queue.stats() / queue.metrics().

-- _hist_bounds: upper bounds (ms) of the latency histogram buckets; a 16th bucket holds the
-- rest.
create or replace function queue._hist_bounds() returns double precision []
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select '{1,2,5,10,25,50,100,250,500,1000,2500,5000,10000,30000,60000}'::double precision[]
$$;

-- _hist: the histogram of latencies `ms` (milliseconds): 16 counts, one per bucket of
-- queue._hist_bounds (the 16th holds the rest). The one expression every writer of the
-- statistics builds its histograms with (queue._record); queue._count_completed writes it out
-- for complete_many's batches (tested to agree) and adds complete's one job in place.
create or replace function queue._hist(ms double precision []) returns bigint []
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bounds constant double precision[] := queue._hist_bounds();
    v_hist bigint[] := array_fill(0::bigint, array[16]);
    v_b int;
begin
    -- a loop, not a query: most calls count one latency (an attempt's end), where a query
    -- cost several times the loop
    for v_i in 1 .. coalesce(cardinality(ms), 0) loop
        v_b := width_bucket(ms[v_i], v_bounds) + 1;
        v_hist[v_b] := v_hist[v_b] + 1;
    end loop;
    return v_hist;
end
$$;

-- _hist_add: two histograms added bucket by bucket (an upsert's merge of its row's and its
-- new counts).
create or replace function queue._hist_add(a bigint [], b bigint []) returns bigint []
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_sum bigint[] := a;
begin
    for v_i in 1 .. 16 loop
        v_sum[v_i] := a[v_i] + b[v_i];
    end loop;
    return v_sum;
end
$$;

-- _hist_quantile: the q-quantile (0..1) of a histogram in milliseconds, interpolated
-- linearly inside its bucket; null for an empty histogram.
create or replace function queue._hist_quantile(hist bigint [], q double precision)
returns double precision
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bounds double precision[] := queue._hist_bounds();
    v_total bigint := 0;
    v_cum bigint := 0;
    v_target double precision;
    v_lo double precision;
    v_hi double precision;
begin
    if hist is null then
        return null;
    end if;
    select coalesce(sum(h), 0) into v_total from unnest(hist) as h;
    if v_total = 0 then
        return null;
    end if;
    v_target := q * v_total;
    for v_i in 1 .. cardinality(hist) loop
        if v_cum + hist[v_i] >= v_target and hist[v_i] > 0 then
            v_lo := case when v_i = 1 then 0 else v_bounds[v_i - 1] end;
            v_hi := coalesce(v_bounds[v_i], v_lo);
            return v_lo + (v_hi - v_lo) * (v_target - v_cum) / hist[v_i];
        end if;
        v_cum := v_cum + hist[v_i];
    end loop;
    return v_bounds[cardinality(v_bounds)];
end
$$;

-- _record: count ended attempts of one queue and category in this minute's row of this
-- backend (never contended by another session). run_ms and wait_ms hold one duration per
-- ended attempt: claim to end, and availability to claim. One upsert, its histograms by
-- queue._hist; used by the funnel's statistics step (queue._settle_counted). complete and
-- complete_many count through queue._count_completed (one row per queue and category of the
-- batch).
create or replace function queue._record(
    queue_name text, category_name text, completed int, retried int, dead int,
    run_ms double precision [], wait_ms double precision []
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, retried, dead, run_count, run_ms,
        run_hist, wait_hist
    ) values (
        date_trunc('minute', now()), pg_backend_pid(), queue_name, coalesce(category_name, ''),
        completed, retried, dead, coalesce(cardinality(run_ms), 0),
        coalesce((select sum(m) from unnest(run_ms) as m), 0), queue._hist(run_ms),
        queue._hist(wait_ms)
    )
    on conflict (minute, backend, queue, category) do update
    set completed = s.completed + excluded.completed,
        retried = s.retried + excluded.retried,
        dead = s.dead + excluded.dead,
        run_count = s.run_count + excluded.run_count,
        run_ms = s.run_ms + excluded.run_ms,
        run_hist = queue._hist_add(s.run_hist, excluded.run_hist),
        wait_hist = queue._hist_add(s.wait_hist, excluded.wait_hist);
end
$$;

-- _count_completed: count completed jobs (job i: of queues[i] and categories[i], run
-- run_ms[i] ms, its run and wait in buckets run_buckets[i] and wait_buckets[i] of
-- queue._hist_bounds) in this backend's rows of the minute, one upsert per queue and
-- category: the statistics step of queue.complete_many, and of queue.complete when its
-- minute's row does not exist yet (complete updates an existing row itself, by primary key).
-- The histograms are written out as 16 counts, a deliberate copy of queue._hist and
-- queue._hist_add: a batch of gated jobs is a group per category, and a call per group cost
-- a fifth of a gated claim + complete_many's server CPU (bench.cpu_ab --gated);
-- sql/tests/queue/complete_many/histograms_agree.sql proves both forms agree.
create or replace function queue._count_completed(
    queues text [], categories text [], run_ms double precision [], run_buckets int [],
    wait_buckets int []
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, run_count, run_ms, run_hist, wait_hist
    )
    select date_trunc('minute', now()), pg_backend_pid(), g.q, coalesce(g.c, ''),
        count(*), count(*), sum(g.ms),
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
    from unnest(_count_completed.queues, _count_completed.categories, _count_completed.run_ms,
        _count_completed.run_buckets, _count_completed.wait_buckets) as g (q, c, ms, rb, wb)
    group by g.q, coalesce(g.c, '')
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
            s.wait_hist[15] + excluded.wait_hist[15], s.wait_hist[16] + excluded.wait_hist[16]];
end
$$;

-- queue.stats: per queue (category null) and per queue and category: current counts, time in
-- progress, recent outcomes over 1 min / 15 min / 1 h, failure rate, retries per job,
-- advisory-lock contention, pickup latency quantiles, and WAL bytes per ended job.
-- Counts of the windows are of attempts that ended in the window; the latency figures are
-- over the last hour. Reads the live table: for operators and scrapers, not the hot path.
-- ready, scheduled, running, waiting: live jobs by state (queue.states(); scheduled counts
-- every job not yet due, the states scheduled and failed).
-- held_xmin_age / held_xmin_seconds (the same on every row): how many transactions, and for
-- how long, the oldest snapshot or transaction of this database (another session's, a
-- prepared transaction, a replication slot) holds back vacuum: while it does, the dead rows
-- of completed jobs cannot be removed and claims slow down. Reading other roles' sessions
-- needs a superuser owner or one granted pg_read_all_stats.
-- paused: the queue is paused (queue.pause); the same on every row of the queue.
-- rate_refusals: claims over the last hour that the category's rate limit held back
-- (queue.set_rate_limit).
-- waiting: jobs waiting for their parents (enqueue with after), never claimed until released.
-- (Its result gained the columns paused, rate_refusals and waiting at the end: an install
-- made before drops the old definition once, as a new result type cannot be put in place.)
do $drop$
begin
    if exists (select from pg_catalog.pg_proc
               where oid = to_regprocedure('queue.stats()')
                 and not 'waiting' = any (coalesce(proargnames, '{}'))) then
        drop function queue.stats();
    end if;
end
$drop$;
create or replace function queue.stats()
returns table (
    queue text,
    category text,
    ready bigint,
    scheduled bigint,
    running bigint,
    dead bigint,
    oldest_ready_age interval,
    avg_run_ms double precision,
    p95_run_ms double precision,
    completed_1m bigint,
    completed_15m bigint,
    completed_1h bigint,
    retried_1m bigint,
    retried_15m bigint,
    retried_1h bigint,
    dead_1m bigint,
    dead_15m bigint,
    dead_1h bigint,
    failure_rate double precision,
    retries_per_job double precision,
    lock_attempts bigint,
    lock_failures bigint,
    contention_ratio double precision,
    pickup_p50_ms double precision,
    pickup_p95_ms double precision,
    pickup_p99_ms double precision,
    wal_bytes_per_job double precision,
    held_xmin_age bigint,
    held_xmin_seconds double precision,
    paused boolean,
    rate_refusals bigint,
    waiting bigint
)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_wal double precision;
    v_xmin_age bigint;
    v_xmin_seconds double precision;
    -- windows are whole minutes: the current one and the n - 1 before it
    v_1m timestamptz := date_trunc('minute', now());
    v_15m timestamptz := date_trunc('minute', now()) - interval '14 minutes';
    v_1h timestamptz := date_trunc('minute', now()) - interval '59 minutes';
begin
    -- WAL bytes per ended job between the two newest samples (cluster-wide WAL).
    select (s1.wal_lsn - s0.wal_lsn)::double precision / nullif((
        select sum(m.completed + m.retried + m.dead) from queue.stat_minutes as m
        where m.minute >= date_trunc('minute', s0.sampled_at)
          and m.minute < date_trunc('minute', s1.sampled_at)), 0)
    into v_wal
    from (select w.* from queue.wal_samples as w order by w.sampled_at desc limit 1) as s1,
        lateral (select w.* from queue.wal_samples as w where w.sampled_at < s1.sampled_at
                 order by w.sampled_at desc limit 1) as s0;

    -- The oldest xmin holding back vacuum in this database (this call's own excepted).
    select age(h.x)::bigint, date_part('epoch', clock_timestamp() - h.since)
    into v_xmin_age, v_xmin_seconds
    from (
        select a.backend_xmin as x, a.xact_start as since from pg_stat_activity as a
        where a.datname = current_database() and a.pid <> pg_backend_pid()
          and a.backend_xmin is not null
        union all
        select a.backend_xid, a.xact_start from pg_stat_activity as a
        where a.datname = current_database() and a.pid <> pg_backend_pid()
          and a.backend_xid is not null
        union all
        select p.transaction, p.prepared from pg_prepared_xacts as p
        where p.database = current_database()
        union all
        select s.xmin, null from pg_replication_slots as s where s.xmin is not null
    ) as h
    order by age(h.x) desc
    limit 1;

    return query
    with live as (select * from queue._live_counts()),
    dl as (
        select d.queue, coalesce(d.category, '') as category, count(*) as dead
        from queue.dead_letters as d group by 1, 2
    ),
    ev as (
        select m.queue, m.category,
            sum(m.completed) filter (where m.minute >= v_1m) as c1,
            sum(m.completed) filter (where m.minute >= v_15m) as c15,
            sum(m.completed) as c60,
            sum(m.retried) filter (where m.minute >= v_1m) as r1,
            sum(m.retried) filter (where m.minute >= v_15m) as r15,
            sum(m.retried) as r60,
            sum(m.dead) filter (where m.minute >= v_1m) as d1,
            sum(m.dead) filter (where m.minute >= v_15m) as d15,
            sum(m.dead) as d60,
            sum(m.run_count) as run_count, sum(m.run_ms) as run_ms
        from queue.stat_minutes as m
        where m.minute >= v_1h
        group by 1, 2
    ),
    hist as (
        select m.queue, m.category, h.kind, h.i, sum(h.v)::bigint as v
        from queue.stat_minutes as m
        cross join lateral (
            select 'run' as kind, r.i, r.v from unnest(m.run_hist) with ordinality as r (v, i)
            union all
            select 'wait', w.i, w.v from unnest(m.wait_hist) with ordinality as w (v, i)
        ) as h
        where m.minute >= v_1h
        group by 1, 2, 3, 4
    ),
    hists as (
        select h.queue, h.category,
            array_agg(h.v order by h.i) filter (where h.kind = 'run') as run_hist,
            array_agg(h.v order by h.i) filter (where h.kind = 'wait') as wait_hist
        from hist as h group by 1, 2
    ),
    locks as (
        select c.category, sum(s.attempts)::bigint as attempts, sum(s.failures)::bigint as failures,
            sum(s.rate_refusals)::bigint as rate_refusals
        from queue.lock_stats as s join queue.categories as c on c.id = s.category_id
        where s.minute >= v_1h
        group by 1
    ),
    keys as (
        select l.queue, l.category from live as l
        union select d.queue, d.category from dl as d
        union select e.queue, e.category from ev as e
        union select q.queue, '' from queue.queues as q where q.paused
    ),
    per_category as (
        select k.queue, k.category,
            coalesce(l.ready, 0) as ready, coalesce(l.scheduled, 0) as scheduled,
            coalesce(l.running, 0) as running, coalesce(d.dead, 0) as dead,
            l.oldest_ready,
            coalesce(e.c1, 0) as c1, coalesce(e.c15, 0) as c15, coalesce(e.c60, 0) as c60,
            coalesce(e.r1, 0) as r1, coalesce(e.r15, 0) as r15, coalesce(e.r60, 0) as r60,
            coalesce(e.d1, 0) as d1, coalesce(e.d15, 0) as d15, coalesce(e.d60, 0) as d60,
            coalesce(e.run_count, 0) as run_count, coalesce(e.run_ms, 0) as run_ms,
            h.run_hist, h.wait_hist,
            coalesce(lk.attempts, 0) as lock_attempts, coalesce(lk.failures, 0) as lock_failures,
            coalesce(lk.rate_refusals, 0) as rate_refusals, coalesce(l.waiting, 0) as waiting
        from keys as k
        left join live as l on l.queue = k.queue and l.category = k.category
        left join dl as d on d.queue = k.queue and d.category = k.category
        left join ev as e on e.queue = k.queue and e.category = k.category
        left join hists as h on h.queue = k.queue and h.category = k.category
        left join locks as lk on lk.category = k.category and k.category <> ''
    ),
    queue_hists as (
        select b.queue,
            array_agg(b.v order by b.i) filter (where b.kind = 'run') as run_hist,
            array_agg(b.v order by b.i) filter (where b.kind = 'wait') as wait_hist
        from (
            select p.queue, x.kind, x.i, sum(x.v)::bigint as v
            from per_category as p
            cross join lateral (
                select 'run' as kind, r.i, r.v from unnest(p.run_hist) with ordinality as r (v, i)
                union all
                select 'wait', w.i, w.v from unnest(p.wait_hist) with ordinality as w (v, i)
            ) as x
            group by 1, 2, 3
        ) as b
        group by b.queue
    ),
    rolled as (
        -- one row per queue and category, plus one per queue (category null)
        select p.queue, nullif(p.category, '') as category, false as total,
            p.ready, p.scheduled, p.running, p.dead, p.oldest_ready,
            p.c1, p.c15, p.c60, p.r1, p.r15, p.r60, p.d1, p.d15, p.d60,
            p.run_count, p.run_ms, p.run_hist, p.wait_hist, p.lock_attempts, p.lock_failures,
            p.rate_refusals, p.waiting
        from per_category as p where p.category <> ''
        union all
        -- one per queue: the sums, and the histograms summed bucket by bucket (grouped
        -- once for all queues, not a subquery per queue: that was quadratic)
        select t.queue, null, true,
            t.ready, t.scheduled, t.running, t.dead, t.oldest_ready,
            t.c1, t.c15, t.c60, t.r1, t.r15, t.r60, t.d1, t.d15, t.d60,
            t.run_count, t.run_ms, qh.run_hist, qh.wait_hist, t.lock_attempts, t.lock_failures,
            t.rate_refusals, t.waiting
        from (
            select p.queue,
                sum(p.ready)::bigint as ready, sum(p.scheduled)::bigint as scheduled,
                sum(p.running)::bigint as running, sum(p.dead)::bigint as dead,
                min(p.oldest_ready) as oldest_ready,
                sum(p.c1)::bigint as c1, sum(p.c15)::bigint as c15, sum(p.c60)::bigint as c60,
                sum(p.r1)::bigint as r1, sum(p.r15)::bigint as r15, sum(p.r60)::bigint as r60,
                sum(p.d1)::bigint as d1, sum(p.d15)::bigint as d15, sum(p.d60)::bigint as d60,
                sum(p.run_count)::bigint as run_count, sum(p.run_ms) as run_ms,
                sum(p.lock_attempts)::bigint as lock_attempts,
                sum(p.lock_failures)::bigint as lock_failures,
                sum(p.rate_refusals)::bigint as rate_refusals,
                sum(p.waiting)::bigint as waiting
            from per_category as p group by p.queue
        ) as t
        left join queue_hists as qh on qh.queue = t.queue
    )
    select r.queue, r.category, r.ready, r.scheduled, r.running, r.dead,
        now() - r.oldest_ready,
        r.run_ms / nullif(r.run_count, 0),
        queue._hist_quantile(r.run_hist, 0.95),
        r.c1::bigint, r.c15::bigint, r.c60::bigint, r.r1::bigint, r.r15::bigint,
        r.r60::bigint, r.d1::bigint, r.d15::bigint, r.d60::bigint,
        (r.r60 + r.d60)::double precision / nullif(r.c60 + r.r60 + r.d60, 0),
        r.r60::double precision / nullif(r.c60 + r.d60, 0),
        r.lock_attempts, r.lock_failures,
        r.lock_failures::double precision / nullif(r.lock_attempts, 0),
        queue._hist_quantile(r.wait_hist, 0.50),
        queue._hist_quantile(r.wait_hist, 0.95),
        queue._hist_quantile(r.wait_hist, 0.99),
        case when r.total then v_wal end,
        coalesce(v_xmin_age, 0), coalesce(v_xmin_seconds, 0),
        coalesce((select q.paused from queue.queues as q where q.queue = r.queue), false),
        r.rate_refusals, r.waiting
    from rolled as r
    order by r.queue, r.category nulls first;
end
$$;

-- _prom_label: a Prometheus label value, escaped.
create or replace function queue._prom_label(value text) returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select '"' || replace(replace(replace(value, '\', '\\'), '"', '\"'), e'\n', '\n') || '"'
$$;

-- queue.metrics: every queue statistic as Prometheus exposition text (format 0.0.4), one
-- group per metric, for any scraper or a postgres_exporter custom query. The cache's figures
-- (cache._metrics()) are appended when the cache is installed, except on a hot standby,
-- which has no copy of the cache's UNLOGGED entries (a comment line says so instead).
create or replace function queue.metrics() returns text
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_out text;
    v_cache text;
begin
    with s as materialized (
        select st.*, 'queue=' || queue._prom_label(st.queue)
            || coalesce(',category=' || queue._prom_label(st.category), '') as l
        from queue.stats() as st
    ),
    m (ord, name, help) as (values
        (1, 'andal_jobs', 'Live jobs by state (ready, scheduled, running, waiting).'),
        (2, 'andal_dead_jobs', 'Jobs in the dead letters.'),
        (3, 'andal_oldest_ready_age_seconds', 'Age of the oldest ready job.'),
        (4, 'andal_job_events', 'Attempts ended in a recent window, by outcome.'),
        (5, 'andal_run_seconds_avg', 'Average time in progress of attempts ended in the last hour.'),
        (6, 'andal_run_seconds_p95', '95th percentile of time in progress, last hour.'),
        (7, 'andal_failure_rate', 'Failed attempts / ended attempts, last hour.'),
        (8, 'andal_retries_per_job', 'Retries per finished job, last hour.'),
        (9, 'andal_lock_attempts', 'Gate try-locks on categories, last hour.'),
        (10, 'andal_lock_contention_ratio', 'Try-locks that returned false / try-locks, last hour.'),
        (11, 'andal_pickup_seconds', 'Ready-to-start latency quantiles, last hour.'),
        (12, 'andal_wal_bytes_per_job', 'WAL bytes per ended attempt between the last two samples.')
    ),
    samples (ord, line) as (
        select 1, format('andal_jobs{%s,state="ready"} %s', s.l, s.ready) from s
        union all select 1, format('andal_jobs{%s,state="scheduled"} %s', s.l, s.scheduled) from s
        union all select 1, format('andal_jobs{%s,state="running"} %s', s.l, s.running) from s
        union all select 1, format('andal_jobs{%s,state="waiting"} %s', s.l, s.waiting) from s
        union all select 2, format('andal_dead_jobs{%s} %s', s.l, s.dead) from s
        union all select 3, format('andal_oldest_ready_age_seconds{%s} %s', s.l,
            coalesce(extract(epoch from s.oldest_ready_age), 0)) from s
        union all select 4, format('andal_job_events{%s,outcome="%s",window="%s"} %s',
            s.l, e.outcome, e.win, e.n)
        from s cross join lateral (values
            ('completed', '1m', s.completed_1m), ('completed', '15m', s.completed_15m),
            ('completed', '1h', s.completed_1h), ('retried', '1m', s.retried_1m),
            ('retried', '15m', s.retried_15m), ('retried', '1h', s.retried_1h),
            ('dead', '1m', s.dead_1m), ('dead', '15m', s.dead_15m), ('dead', '1h', s.dead_1h)
        ) as e (outcome, win, n)
        union all select 5, format('andal_run_seconds_avg{%s} %s', s.l, s.avg_run_ms / 1000)
        from s where s.avg_run_ms is not null
        union all select 6, format('andal_run_seconds_p95{%s} %s', s.l, s.p95_run_ms / 1000)
        from s where s.p95_run_ms is not null
        union all select 7, format('andal_failure_rate{%s} %s', s.l, s.failure_rate)
        from s where s.failure_rate is not null
        union all select 8, format('andal_retries_per_job{%s} %s', s.l, s.retries_per_job)
        from s where s.retries_per_job is not null
        union all select 9, format('andal_lock_attempts{%s} %s', s.l, s.lock_attempts)
        from s where s.category is not null
        union all select 10, format('andal_lock_contention_ratio{%s} %s', s.l, s.contention_ratio)
        from s where s.contention_ratio is not null
        union all select 11, format('andal_pickup_seconds{%s,quantile="%s"} %s', s.l, q.q, q.v / 1000)
        from s cross join lateral (values
            ('0.5', s.pickup_p50_ms), ('0.95', s.pickup_p95_ms), ('0.99', s.pickup_p99_ms)
        ) as q (q, v)
        where q.v is not null
        union all select 12, format('andal_wal_bytes_per_job{%s} %s', s.l, s.wal_bytes_per_job)
        from s where s.wal_bytes_per_job is not null
    )
    select string_agg(b.block, '' order by b.ord) into v_out
    from (
        select m.ord, format(e'# HELP %s %s\n# TYPE %s gauge\n', m.name, m.help, m.name)
            || coalesce(string_agg(x.line || e'\n', '' order by x.line), '') as block
        from m left join samples as x on x.ord = m.ord
        group by m.ord, m.name, m.help
    ) as b;
    if to_regprocedure('cache._metrics()') is not null and pg_is_in_recovery() then
        v_out := v_out || e'# andal_cache_*: not served by a standby (the shared cache is '
            || e'UNLOGGED and lives on the primary only): scrape the primary for them\n';
    elsif to_regprocedure('cache._metrics()') is not null then
        execute 'select cache._metrics()' into v_cache;
        v_out := v_out || coalesce(v_cache, '');
    end if;
    return v_out;
end
$$;

comment on function queue.stats() is
'Per queue and category: counts, run time, outcomes over 1m/15m/1h, failure rate, contention, pickup latency.';
comment on function queue.metrics() is 'Every queue statistic as Prometheus exposition text.';
revoke all on function queue._hist_bounds() from public;
revoke all on function queue._hist(double precision []) from public;
revoke all on function queue._hist_add(bigint [], bigint []) from public;
revoke all on function queue._hist_quantile(bigint [], double precision) from public;
revoke all on function queue._record(text, text, int, int, int, double precision [], double precision [])
from public;
revoke all on function queue._count_completed(
    text [], text [], double precision [], int [], int []
) from public;
revoke all on function queue._prom_label(text) from public;
revoke all on function queue.stats() from public;
revoke all on function queue.metrics() from public;
grant execute on function queue.stats() to andal_admin, andal_worker, andal_monitor;
grant execute on function queue.metrics() to andal_admin, andal_worker, andal_monitor;
