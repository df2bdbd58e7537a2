-- 0004: cache read counters reported by the drivers in batches: one row per minute,
-- worker pool, job type and backend, so reporting sessions never share a counter row.

create table cache.read_stats (
    minute timestamptz not null,
    pool text not null,
    job_type text not null,
    backend int not null,
    local_hits bigint not null default 0,
    shared_hits bigint not null default 0,
    stale_hits bigint not null default 0,
    misses bigint not null default 0,
    primary key (minute, pool, job_type, backend)
);

create index read_stats_minute_idx on cache.read_stats (minute);

revoke all on cache.read_stats from public;
