-- cache._metrics: the shared cache's figures as Prometheus exposition text (format 0.0.4),
-- appended by queue.metrics(). Cheap enough for a scrape: counts of the entries, and of
-- the log's last 5 minutes (BRIN on log.at).
-- * andal_cache_entries{state}: fresh, stale (invalidated), expired, tombstone.
-- * andal_cache_changes{op,window}: writes and invalidations in the last 1m / 5m.
-- * andal_cache_read_repairs{window}: invalidations by read-repair (checksum mismatch) in 5m.
-- * andal_cache_seconds_since_last_change: age of the newest log row (stale-cache alert).
-- * andal_cache_epoch: the current epoch (a change means a crash or reset emptied the cache).
-- * andal_cache_view_lag_seconds{view}, andal_cache_view_pending_changes{view}: per
--   registered materialized view.
create or replace function cache._metrics() returns text
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    with e as (
        select
            count(*) filter (where value is not null and not stale
                and coalesce(expires_at > now(), true)) as fresh,
            count(*) filter (where value is not null and stale) as stale,
            count(*) filter (where value is not null and not stale and expires_at <= now())
                as expired,
            count(*) filter (where value is null) as tombstone
        from cache.entries
    ),
    l as (
        select
            count(*) filter (where op = 'put' and at > now() - interval '1 minute') as put_1m,
            count(*) filter (where op = 'put') as put_5m,
            count(*) filter (where op = 'invalidate' and at > now() - interval '1 minute')
                as inv_1m,
            count(*) filter (where op = 'invalidate') as inv_5m,
            count(*) filter (where reason = 'read-repair') as repair_5m
        from cache.log
        where at > now() - interval '5 minutes'
    ),
    newest as (
        select extract(epoch from now() - l.at) as age
        from cache.log as l order by l.xid desc, l.seq desc limit 1
    ),
    v as (
        select v.view::text as name,
            extract(epoch from now() - coalesce(v.refreshed_at, v.registered_at)) as lag,
            cache._view_changes(v.view) - v.seen_changes as pending
        from cache.views as v
        join pg_catalog.pg_class as c on c.oid = v.view
    ),
    lbl as (
        select '"' || replace(replace(replace(v.name, '\', '\\'), '"', '\"'), e'\n', '\n')
            || '"' as q, v.*
        from v
    )
    select concat(
        e'# HELP andal_cache_entries Shared cache entries by state.\n',
        e'# TYPE andal_cache_entries gauge\n',
        format(e'andal_cache_entries{state="fresh"} %s\n', e.fresh),
        format(e'andal_cache_entries{state="stale"} %s\n', e.stale),
        format(e'andal_cache_entries{state="expired"} %s\n', e.expired),
        format(e'andal_cache_entries{state="tombstone"} %s\n', e.tombstone),
        e'# HELP andal_cache_changes Cache writes and invalidations in a recent window.\n',
        e'# TYPE andal_cache_changes gauge\n',
        format(e'andal_cache_changes{op="put",window="1m"} %s\n', l.put_1m),
        format(e'andal_cache_changes{op="put",window="5m"} %s\n', l.put_5m),
        format(e'andal_cache_changes{op="invalidate",window="1m"} %s\n', l.inv_1m),
        format(e'andal_cache_changes{op="invalidate",window="5m"} %s\n', l.inv_5m),
        e'# HELP andal_cache_read_repairs Entries invalidated by read-repair (checksum).\n',
        e'# TYPE andal_cache_read_repairs gauge\n',
        format(e'andal_cache_read_repairs{window="5m"} %s\n', l.repair_5m),
        e'# HELP andal_cache_seconds_since_last_change Age of the newest cache log row.\n',
        e'# TYPE andal_cache_seconds_since_last_change gauge\n',
        (select format(e'andal_cache_seconds_since_last_change %s\n', n.age) from newest as n),
        e'# HELP andal_cache_epoch Epoch of the shared cache (changes after a crash).\n',
        e'# TYPE andal_cache_epoch gauge\n',
        format(e'andal_cache_epoch %s\n', coalesce((select ep.epoch from cache.epoch as ep), 0)),
        e'# HELP andal_cache_view_lag_seconds Age of a materialized view''s data.\n',
        e'# TYPE andal_cache_view_lag_seconds gauge\n',
        (select string_agg(format(e'andal_cache_view_lag_seconds{view=%s} %s\n', q, lag), ''
            order by name) from lbl),
        e'# HELP andal_cache_view_pending_changes Source row changes since the last refresh.\n',
        e'# TYPE andal_cache_view_pending_changes gauge\n',
        (select string_agg(format(e'andal_cache_view_pending_changes{view=%s} %s\n', q, pending),
            '' order by name) from lbl),
        e'# HELP andal_cache_reads Driver-reported cache reads of the last hour, by result.\n',
        e'# TYPE andal_cache_reads gauge\n',
        (select string_agg(format(e'andal_cache_reads{pool=%s,job_type=%s,result="%s"} %s\n',
            queue._prom_label(s.labels ->> 'pool'), queue._prom_label(s.labels ->> 'job_type'),
            s.labels ->> 'result', s.value), '' order by s.labels::text)
         from cache.stats() as s where s.metric = 'reads'),
        e'# HELP andal_cache_hit_ratio (local + shared hits) / reads, last hour.\n',
        e'# TYPE andal_cache_hit_ratio gauge\n',
        (select string_agg(format(e'andal_cache_hit_ratio{pool=%s,job_type=%s} %s\n',
            queue._prom_label(s.labels ->> 'pool'), queue._prom_label(s.labels ->> 'job_type'),
            s.value), '' order by s.labels::text)
         from cache.stats() as s where s.metric = 'hit_ratio' and s.value is not null),
        e'# HELP andal_cache_stale_overdue Entries stale or expired for over a minute.\n',
        e'# TYPE andal_cache_stale_overdue gauge\n',
        (select format(e'andal_cache_stale_overdue %s\n', s.value)
         from cache.stats() as s where s.metric = 'stale_overdue')
    )
    from e cross join l
$$;

comment on function cache._metrics() is
'The shared cache''s figures as Prometheus text, appended by queue.metrics().';
revoke all on function cache._metrics() from public;
