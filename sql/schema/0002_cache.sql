-- 0002: the coordinated cache. Run once, never edited after release (add a new number instead).
--
-- * `cache.entries`: the shared cache. UNLOGGED: values are rewritten constantly and are
--   derived data, so they are kept out of the WAL; a crash empties the table. The crash is
--   then announced by a new epoch (`cache.epoch`, also UNLOGGED, so it is emptied by the same
--   crash) and every local cache drops what it holds.
-- * `cache.log`: the ordered change log (one row per write or invalidation, in the writer's
--   transaction). Logged: it is small and it is what makes invalidation reliable. Each row
--   carries the writer's top-level transaction id (xid8) so that readers resume from a
--   transaction-id watermark that can never skip a change committing late.
-- * `cache.views`, `cache.view_sources`, `cache.source_changes`: materialized views refreshed
--   as queue work, the tables they track, and the TRUNCATE counters of those tables.
-- * `cache.config`: the knobs of the adaptive TTL and the size limits.

-- A row of cache.changes_since() (a type, because its `watermark` column has the name of the
-- function's parameter). xid: the writer's transaction id (the paging cursor, with seq);
-- snapshot: the position to resume from in snapshot mode.
create type cache.change as (
    seq bigint, key text, version bigint, op text, watermark bigint, xid bigint,
    snapshot pg_snapshot
);

-- One number per change: the version it gives its key and its position in the log.
create sequence cache.change_seq as bigint;
-- Epochs of the shared cache: a new one after every crash (or explicit reset).
create sequence cache.epoch_seq as bigint;

create table cache.config (
    id boolean primary key default true constraint config_single check (id),
    -- TTL of a key never seen changing, and the bounds of the adaptive TTL.
    default_ttl interval not null default '1 hour'
    constraint config_default_ttl_check check (default_ttl > '0'),
    min_ttl interval not null default '1 second'
    constraint config_min_ttl_check check (min_ttl > '0'),
    max_ttl interval not null default '1 hour',
    -- ttl = ttl_factor * observed interval between changes (EWMA with weight ewma_alpha).
    ttl_factor double precision not null default 0.5
    constraint config_ttl_factor_check check (ttl_factor > 0),
    ewma_alpha double precision not null default 0.3
    constraint config_ewma_alpha_check check (ewma_alpha > 0 and ewma_alpha <= 1),
    max_value_bytes int not null default 1048576
    constraint config_max_value_bytes_check check (max_value_bytes > 0),
    -- How long cache.prune() keeps log rows (readers further behind flush their caches).
    log_keep interval not null default '1 hour'
    constraint config_log_keep_check check (log_keep > '0'),
    constraint config_ttl_bounds_check check (min_ttl <= max_ttl)
);
insert into cache.config default values;

-- The shared cache. A row with stale = true was invalidated: its old value is kept (and
-- served flagged stale to readers that accept it) until a refresh writes a new one. A row
-- with a null value is a tombstone: the key was invalidated and has no value, but keeps its
-- version and its change statistics.
create unlogged table cache.entries (
    key text primary key,
    value jsonb,
    checksum text,
    version bigint not null,
    stale boolean not null default false,
    expires_at timestamptz,
    written_at timestamptz not null default now(),
    -- adaptive-TTL statistics: how many changes, the last one, EWMA of the gaps (s)
    changes bigint not null default 0,
    changed_at timestamptz,
    mean_interval double precision,
    invalidated_at timestamptz,
    reason text
) with (
    -- Rewrites are HOT updates (no indexed column changes): leave room on every page.
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.05,
    toast.autovacuum_vacuum_scale_factor = 0.02,
    toast.autovacuum_vacuum_threshold = 500,
    toast.autovacuum_vacuum_cost_delay = 0
);

-- The change log. Read in (xid, seq) order from a transaction-id watermark.
create table cache.log (
    seq bigint not null,
    xid xid8 not null,
    key text not null,
    op text not null constraint log_op_check check (op in ('put', 'invalidate')),
    reason text,
    at timestamptz not null default now(),
    constraint log_pkey primary key (xid, seq)
) with (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
-- Pruning by age (insert order follows time, so a BRIN index is enough).
create index log_at_idx on cache.log using brin (at);

-- Where the log was cut: a reader whose watermark is at or below pruned_xid must flush.
create table cache.log_state (
    id boolean primary key default true constraint log_state_single check (id),
    pruned_xid xid8 not null default '0',
    pruned_at timestamptz
);
insert into cache.log_state default values;

-- The current epoch of the shared cache. UNLOGGED on purpose: emptied by a crash together
-- with cache.entries; the next reader creates a new epoch and every local cache flushes.
create unlogged table cache.epoch (
    id boolean primary key default true constraint epoch_single check (id),
    epoch bigint not null,
    started_at timestamptz not null default now()
);
insert into cache.epoch (epoch) values (nextval('cache.epoch_seq'));

-- Materialized views kept as a precomputed cache.
create table cache.views (
    view regclass primary key,
    max_lag interval not null constraint views_max_lag_check check (max_lag > '0'),
    max_changes bigint not null constraint views_max_changes_check check (max_changes >= 1),
    -- cache._view_changes() read just before the last refresh took its snapshot
    seen_changes bigint not null default 0,
    registered_at timestamptz not null default now(),
    refreshed_at timestamptz,
    last_duration interval,
    refreshes bigint not null default 0
);

create table cache.view_sources (
    view regclass not null references cache.views (view) on delete cascade,
    source regclass not null,
    primary key (view, source)
);
create index view_sources_source_idx on cache.view_sources (source);

-- TRUNCATE counters of tracked source tables (row changes come from the statistics): one
-- row per (table, backend), so no two sessions share a counter row. Monotonic; rows of ended
-- backends are folded into backend 0 by cache.refresh_due(). UNLOGGED: a crash resets the
-- counters (as it resets the statistics), which makes the sums differ from seen_changes, so
-- every view is refreshed once.
create unlogged table cache.source_changes (
    source oid not null,
    backend int not null,
    changes bigint not null default 0,
    last_change_at timestamptz not null default now(),
    primary key (source, backend)
) with (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);

revoke all on all tables in schema cache from public;
revoke all on all sequences in schema cache from public;
