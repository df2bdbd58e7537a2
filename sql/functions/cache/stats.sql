-- Cache statistics: what drivers report, and cache.stats().

-- cache.report_reads: add a driver's read counters (since its last report) to this minute's
-- row of its pool and job types. `counts` maps a job type to counters:
-- {"mail": {"local_hit": 10, "shared_hit": 2, "stale_hit": 0, "miss": 1}, ...}; unknown
-- counter names are ignored. Returns the number of job types recorded.
-- Raises: 22004 null pool or counts; 22023 counts not an object of objects, more than 1000
-- job types, counters not whole numbers of 0 .. 2^63-1; 22003 a sum past 2^63-1.
create or replace function cache.report_reads(pool text, counts jsonb) returns int
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_n int;
begin
    perform queue._check_name(report_reads.pool, 'pool');
    if report_reads.counts is null then
        raise exception 'counts must not be null' using errcode = '22004';
    end if;
    if jsonb_typeof(report_reads.counts) <> 'object' then
        raise exception 'counts must map job types to objects of non-negative counters'
            using errcode = '22023',
            hint = 'Example: {"mail": {"local_hit": 10, "shared_hit": 2, "miss": 1}}';
    end if;
    if (select count(*) from jsonb_object_keys(report_reads.counts)) > 1000 then
        raise exception 'counts must hold at most 1000 job types' using errcode = '22023';
    end if;
    -- whole numbers of the bigint range (a jsonb number may have 131,072 digits)
    if exists (
        select from jsonb_each(report_reads.counts) as e (k, v)
        where jsonb_typeof(e.v) <> 'object' or length(e.k) not between 1 and 128
            or exists (select from jsonb_each(e.v) as c (n, x)
                       where jsonb_typeof(c.x) <> 'number'
                          or (c.x)::numeric not between 0 and 9223372036854775807
                          or (c.x)::numeric <> trunc((c.x)::numeric))
    ) then
        raise exception 'counts must map job types to objects of non-negative counters'
            using errcode = '22023',
            hint = 'Example: {"mail": {"local_hit": 10, "shared_hit": 2, "miss": 1}}';
    end if;
    insert into cache.read_stats as s (
        minute, pool, job_type, backend, local_hits, shared_hits, stale_hits, misses
    )
    select date_trunc('minute', now()), report_reads.pool, e.k, pg_backend_pid(),
        coalesce((e.v ->> 'local_hit')::numeric::bigint, 0),
        coalesce((e.v ->> 'shared_hit')::numeric::bigint, 0),
        coalesce((e.v ->> 'stale_hit')::numeric::bigint, 0),
        coalesce((e.v ->> 'miss')::numeric::bigint, 0)
    from jsonb_each(report_reads.counts) as e (k, v)
    on conflict (minute, pool, job_type, backend) do update
    set local_hits = s.local_hits + excluded.local_hits,
        shared_hits = s.shared_hits + excluded.shared_hits,
        stale_hits = s.stale_hits + excluded.stale_hits,
        misses = s.misses + excluded.misses;
    get diagnostics v_n = row_count;
    delete from cache.read_stats as s where s.minute < now() - interval '1 day'
        and s.backend = pg_backend_pid();
    return v_n;
end
$$;

-- cache.stats: the cache's figures as (metric, labels, value) rows.
-- * entries, bytes: rows and total size of the shared cache; value_bytes: the counted size
--   of its values, which max_total_bytes (cache.config) bounds.
-- * reads{pool,job_type,result}, hit_ratio{pool,job_type}: driver-reported reads of the last
--   hour (local_hit, shared_hit, stale_hit, miss); hit ratio = (local + shared) / reads.
-- * invalidations_per_minute (last 5 min), queue_ready (ready jobs now),
--   invalidations_per_ready_job: invalidation events against queue depth.
-- * stale_overdue: entries invalidated (or expired) more than stale_after ago and still not
--   refreshed — a stale-cache alert; checksum_failures_1h: read-repairs of the last hour.
-- * seconds_since_last_invalidation.
-- * view_lag_seconds{view}, view_last_refresh_seconds{view}, view_pending_changes{view}.
-- On a hot standby the figures of the entries (entries, bytes, value_bytes, stale_overdue)
-- are null: the entries are UNLOGGED and live on the primary only; the others are served.
create or replace function cache.stats(stale_after interval default '1 minute')
returns table (metric text, labels jsonb, value double precision)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_entries double precision;
    v_bytes double precision;
    v_value_bytes double precision;
    v_overdue double precision;
begin
    perform queue._check_interval(stats.stale_after, 'stale_after');
    if not pg_is_in_recovery() then  -- a standby has no copy of the UNLOGGED entries
        select count(*), count(*) filter (where e.value is not null and (
                (e.stale and e.invalidated_at < now() - stats.stale_after)
                or (not e.stale and e.expires_at < now() - stats.stale_after)))
        into v_entries, v_overdue from cache.entries as e;
        v_bytes := pg_total_relation_size('cache.entries'::regclass);
        v_value_bytes := cache._usage();
    end if;
    return query
    with r as (
        select s.pool, s.job_type, sum(s.local_hits) as lh, sum(s.shared_hits) as sh,
            sum(s.stale_hits) as st, sum(s.misses) as mi
        from cache.read_stats as s
        where s.minute >= date_trunc('minute', now()) - interval '59 minutes'
        group by 1, 2
    ),
    inv as (
        select count(*) filter (where l.op = 'invalidate') as n,
            count(*) filter (where l.reason = 'read-repair') as repairs
        from cache.log as l where l.at > now() - interval '5 minutes'
    ),
    ready as (
        select count(*) as n from queue.jobs as j
        where j.status = 'pending' and j.available_at <= now()
    )
    select 'entries', '{}'::jsonb, v_entries
    union all
    select 'bytes', '{}', v_bytes
    union all
    select 'value_bytes', '{}', v_value_bytes
    union all
    select 'max_total_bytes', '{}',
        (select c.max_total_bytes from cache.config as c)::double precision
    union all
    select 'reads', jsonb_build_object('pool', r.pool, 'job_type', r.job_type, 'result', x.k),
        x.v::double precision
    from r cross join lateral (values
        ('local_hit', r.lh), ('shared_hit', r.sh), ('stale_hit', r.st), ('miss', r.mi)
    ) as x (k, v)
    union all
    select 'hit_ratio', jsonb_build_object('pool', r.pool, 'job_type', r.job_type),
        ((r.lh + r.sh) / nullif(r.lh + r.sh + r.st + r.mi, 0))::double precision
    from r
    union all
    select 'invalidations_per_minute', '{}', (select inv.n from inv) / 5.0
    union all
    select 'queue_ready', '{}', (select ready.n from ready)::double precision
    union all
    select 'invalidations_per_ready_job', '{}',
        ((select inv.n from inv) / 5.0 / nullif((select ready.n from ready), 0))::double precision
    union all
    select 'stale_overdue', '{}', v_overdue
    union all
    select 'checksum_failures_1h', '{}', count(*)::double precision from cache.log as l
    where l.reason = 'read-repair' and l.at > now() - interval '1 hour'
    union all
    select 'seconds_since_last_invalidation', '{}',
        date_part('epoch', now() - max(l.at)) from cache.log as l where l.op = 'invalidate'
    union all
    select 'view_lag_seconds', jsonb_build_object('view', v.view::text),
        date_part('epoch', now() - coalesce(v.refreshed_at, v.registered_at))
    from cache.views as v
    union all
    select 'view_last_refresh_seconds', jsonb_build_object('view', v.view::text),
        date_part('epoch', v.last_duration)
    from cache.views as v where v.last_duration is not null
    union all
    select 'view_pending_changes', jsonb_build_object('view', v.view::text),
        (cache._view_changes(v.view) - v.seen_changes)::double precision
    from cache.views as v;
end
$$;

comment on function cache.report_reads(text, jsonb) is
'Add a driver''s cache read counters (per job type) to its pool''s stats.';
comment on function cache.stats(interval) is
'The cache''s figures as (metric, labels, value) rows: size, hit ratios, invalidations, alerts.';
revoke all on function cache.report_reads(text, jsonb) from public;
revoke all on function cache.stats(interval) from public;
grant execute on function cache.report_reads(text, jsonb) to andal_worker, andal_admin;
grant execute on function cache.stats(interval) to andal_worker, andal_admin, andal_monitor;
