-- 0001: the queue. Run once, never edited after release (add a new number instead).
--
-- Schemas `queue` and `cache`, the NOLOGIN roles, the live job table, dead letters, results,
-- per-queue configuration, category gating (`categories`, `worker_locks`) and the bookkeeping
-- the installer needs. Functions live in sql/functions/ and are re-applied on every install.

-- Roles are cluster-wide: create them once; an owner without CREATEROLE needs them made first.
do $roles$
declare
    v_role text;
begin
    foreach v_role in array array['andal_producer', 'andal_worker', 'andal_admin'] loop
        if not exists (select from pg_catalog.pg_roles where rolname = v_role) then
            begin
                execute format('create role %I nologin', v_role);
            exception when insufficient_privilege then
                raise exception 'andal needs the role % and may not create it', v_role
                    using errcode = '42501',
                    hint = 'Have a superuser run: create role andal_producer nologin; '
                    'create role andal_worker nologin; create role andal_admin nologin; '
                    'or grant CREATEROLE to the installing role.';
            end;
        end if;
    end loop;
end
$roles$;

create schema queue;
create schema cache;
revoke all on schema queue from public;
revoke all on schema cache from public;
grant usage on schema queue to andal_producer, andal_worker, andal_admin;
grant usage on schema cache to andal_producer, andal_worker, andal_admin;

-- PUBLIC's EXECUTE on functions is revoked by each function file and, as a safety net, by
-- sql/functions/zz_lockdown.sql on every install. (`alter default privileges in schema ...
-- revoke ... from public` cannot do it: a per-schema default only adds to the global one.)

create table queue.schema_migrations (
    version text primary key,
    name text not null,
    applied_at timestamptz not null default now()
);

create table queue.install_state (
    id boolean primary key default true constraint install_state_single check (id),
    functions_digest text not null,
    installed_at timestamptz not null default now()
);

-- Per-queue policy. A queue without a row uses the defaults of the columns below.
create table queue.queues (
    queue text primary key,
    max_attempts int not null default 5
    constraint queues_max_attempts_check check (max_attempts >= 1),
    lease interval not null default '60 seconds'
    constraint queues_lease_check check (lease > '0'),
    backoff text not null default 'linear'
    constraint queues_backoff_check check (backoff in ('linear', 'exponential')),
    backoff_base interval not null default '5 seconds'
    constraint queues_backoff_base_check check (backoff_base >= '0'),
    backoff_cap interval not null default '1 hour'
    constraint queues_backoff_cap_check check (backoff_cap >= '0'),
    jitter real not null default 0
    constraint queues_jitter_check check (jitter >= 0 and jitter <= 1),
    notify boolean not null default true,
    payload_limit int not null default 1048576
    constraint queues_payload_limit_check check (payload_limit > 0),
    keep_results boolean not null default false,
    cache_policy text not null default 'invalidate'
    constraint queues_cache_policy_check check (cache_policy in ('invalidate', 'rewrite', 'none')),
    updated_at timestamptz not null default now()
);

-- Category gate: at most max_running running jobs of a category (0 pauses it).
create table queue.categories (
    id bigint generated always as identity primary key,
    category text not null constraint categories_category_key unique,
    max_running int not null default 1
    constraint categories_max_running_check check (max_running >= 0),
    created_at timestamptz not null default now()
);
create index categories_paused_idx on queue.categories (id) where max_running = 0;

-- The live table: pending and running jobs only. Completed jobs leave it, so it stays small whatever the history.
create table queue.jobs (
    id bigint generated always as identity primary key,
    queue text not null,
    category text,
    priority int not null default 0,
    status text not null default 'pending'
    constraint jobs_status_check check (status in ('pending', 'running')),
    payload jsonb not null,
    attempt int not null default 0,
    max_attempts int not null,
    available_at timestamptz not null default now(),
    enqueued_at timestamptz not null default now(),
    dedup_key text,
    token uuid,
    worker text,
    claimed_at timestamptz,
    lease_expires_at timestamptz,
    errors jsonb not null default '[]',
    cache_key text,
    cache_version bigint,
    constraint jobs_running_check check (
        status = 'pending' or (token is not null and lease_expires_at is not null)
    )
) with (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- Claim: ready jobs by priority then availability, for one queue and across queues. Ungated
-- (no category) and gated jobs are indexed apart, so a full category never makes a claimer
-- scan past its backlog to reach ungated work.
create index jobs_ready_queue_idx on queue.jobs (queue, priority desc, available_at, id)
where status = 'pending' and category is null;
create index jobs_ready_idx on queue.jobs (priority desc, available_at, id)
where status = 'pending' and category is null;
create index jobs_gated_queue_idx on queue.jobs (queue, priority desc, available_at, id)
where status = 'pending' and category is not null;
create index jobs_gated_idx on queue.jobs (priority desc, available_at, id)
where status = 'pending' and category is not null;
-- Take back expired leases.
create index jobs_lease_idx on queue.jobs (lease_expires_at) where status = 'running';
-- One live job per (queue, dedup_key).
create unique index jobs_dedup_idx on queue.jobs (queue, dedup_key)
where dedup_key is not null;

-- One row per running job of a gated category: the persistent part of the gate.
create table queue.worker_locks (
    job_id bigint primary key,
    category_id bigint not null,
    worker text not null,
    locked_at timestamptz not null default now()
) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01);
create index worker_locks_category_idx on queue.worker_locks (category_id);

-- Jobs past their attempts, cancelled, or failed as non-retryable, with their error history.
create table queue.dead_letters (
    job_id bigint primary key,
    queue text not null,
    category text,
    priority int not null,
    payload jsonb not null,
    attempt int not null,
    max_attempts int not null,
    enqueued_at timestamptz not null,
    died_at timestamptz not null default now(),
    dedup_key text,
    reason text not null
    constraint dead_letters_reason_check check (
        reason in ('exhausted', 'non_retryable', 'cancelled')
    ),
    last_error text,
    errors jsonb not null default '[]',
    cache_key text
);
create index dead_letters_queue_idx on queue.dead_letters (queue, died_at);
create index dead_letters_died_idx on queue.dead_letters (died_at);

-- Results of completed jobs, only for queues with keep_results.
create table queue.results (
    job_id bigint primary key,
    queue text not null,
    result jsonb,
    completed_at timestamptz not null default now()
);
create index results_completed_idx on queue.results (completed_at);

-- Advisory-lock contention: one row per minute, backend and category, so claimers
-- never wait on a counter row.
create table queue.lock_stats (
    minute timestamptz not null,
    backend int not null,
    category_id bigint not null,
    attempts bigint not null default 0,
    failures bigint not null default 0,
    primary key (minute, backend, category_id)
);

revoke all on all tables in schema queue from public;
revoke all on all sequences in schema queue from public;
