-- 0009: time in SQL: periodic jobs (schedules and their ticks), andal's own housekeeping as
-- schedules, job timeouts and rate limits. Run once, never edited after release (add a new
-- number instead).
--
-- * queue.schedules: one row per named schedule (a cron expression in a time zone, or a fixed
--   period), with the next fire time the claim and queue.maintain() probe by index. Rows
--   with a task are andal's own housekeeping, run by queue.maintain() instead of enqueued.
-- * queue.schedule_ticks: one row per fired tick; its primary key (schedule, tick) makes a
--   second firing of the same tick a no-op, whoever tries it.
-- * queue.jobs.timeout: the maximum run time of one attempt (the enqueue's, else the
--   queue's); the lease never runs past claimed_at + timeout.
-- * queue.queues: timeout (default for its jobs), results_retention, dead_retention.
-- * queue.categories: an optional rate limit (at most rate_starts starts per rate_per), with
--   the times of its latest starts in one array (the sliding window; no row per job).
-- * queue.lock_stats.rate_refusals: claims that found a category's rate used up.

create table queue.schedules (
    name text primary key
    constraint schedules_name_check check (length(name) between 1 and 128),
    queue text not null,
    cron text,
    every interval,
    timezone text not null default 'UTC',
    payload jsonb not null default '{}',
    category text,
    priority int not null default 0,
    max_attempts int,
    missed text not null default 'latest'
    constraint schedules_missed_check check (missed in ('latest', 'all')),
    catch_up int not null default 100
    constraint schedules_catch_up_check check (catch_up between 1 and 10000),
    enabled boolean not null default true,
    -- andal's own housekeeping: the name of the task queue.maintain() runs (no job)
    task text,
    anchor timestamptz not null default date_trunc('second', now()),
    next_at timestamptz,
    last_tick timestamptz,
    last_fired_at timestamptz,
    last_job_id bigint,
    last_error text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint schedules_when_check check ((cron is null) <> (every is null))
);

-- The due probes: one index entry decides whether anything is due (next_at is null for a
-- disabled schedule). Job schedules by queue (a claim of listed queues) and overall (a claim
-- of every queue); tasks are read by queue.maintain() only.
create index schedules_due_queue_idx on queue.schedules (queue, next_at)
where task is null and next_at is not null;
create index schedules_due_idx on queue.schedules (next_at)
where task is null and next_at is not null;

create table queue.schedule_ticks (
    schedule text not null,
    tick timestamptz not null,
    job_id bigint,
    fired_at timestamptz not null default now(),
    primary key (schedule, tick)
);
create index schedule_ticks_fired_idx on queue.schedule_ticks (fired_at);

alter table queue.jobs add column timeout interval;

alter table queue.queues
add column timeout interval
constraint queues_timeout_check check (timeout > '0'),
add column results_retention interval not null default '7 days'
constraint queues_results_retention_check check (results_retention > '0'),
add column dead_retention interval not null default '30 days'
constraint queues_dead_retention_check check (dead_retention > '0');

alter table queue.categories
add column rate_starts int
constraint categories_rate_starts_check check (rate_starts between 1 and 10000),
add column rate_per interval
constraint categories_rate_per_check check (rate_per > '0'),
add column rate_log timestamptz [] not null default '{}',
add constraint categories_rate_check check ((rate_starts is null) = (rate_per is null));

alter table queue.lock_stats add column rate_refusals bigint not null default 0;

-- andal's housekeeping, as schedules queue.maintain() runs (re-time them with queue.schedule,
-- switch one off with enabled => false).
insert into queue.schedules (name, queue, every, task, next_at) values
('andal.cache_refresh_due', 'andal', interval '1 minute', 'cache_refresh_due', now()),
('andal.cache_prune', 'andal', interval '10 minutes', 'cache_prune', now()),
('andal.retention', 'andal', interval '1 hour', 'retention', now()),
('andal.stats_rollup', 'andal', interval '10 minutes', 'stats_rollup', now());

revoke all on queue.schedules, queue.schedule_ticks from public;
