-- 0003: queue statistics kept cheaply: one counter row per minute, backend, queue and
-- category (no row per job, no row shared between sessions), with two compact latency
-- histograms; and WAL samples for bytes per job.

create table queue.stat_minutes (
    minute timestamptz not null,
    backend int not null,
    queue text not null,
    category text not null default '',
    completed bigint not null default 0,
    retried bigint not null default 0,
    dead bigint not null default 0,
    -- time in progress (claim to end) of the attempts that ended: sum and histogram
    run_count bigint not null default 0,
    run_ms double precision not null default 0,
    run_hist bigint [] not null,
    -- enqueue (or availability) to start of the attempts that ended
    wait_hist bigint [] not null,
    primary key (minute, backend, queue, category)
) with (fillfactor = 50);

create index stat_minutes_minute_idx on queue.stat_minutes (minute);

-- WAL position, sampled by queue.maintain(): WAL bytes per job between samples.
create table queue.wal_samples (
    sampled_at timestamptz primary key default now(),
    wal_lsn pg_lsn not null
);

revoke all on queue.stat_minutes, queue.wal_samples from public;
