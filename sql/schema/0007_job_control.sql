-- 0007: control and visibility of every job.
--
-- * andal_monitor: a NOLOGIN role that may only read (statistics, workers, job lookups), for
--   dashboards and monitoring.
-- * Per-queue pause (queues.paused) and history retention (queues.history_retention; null:
--   no history, the default).
-- * Two columns of the live table: abort_requested_at (queue.cancel of a running job asks
--   its worker to stop) and watched (someone waits for the job's end: queue.watch; the end
--   is then announced on channel andal_done). Both are added without a table rewrite and
--   work on a sharded live table as on a plain one.
-- * queue.job_info: the row type of queue.job and queue.jobs_by.
-- * queue.history: finished jobs (completed, dead, cancelled) of queues that keep history,
--   partitioned by range of keep_until (when the row may go), so retention drops whole
--   partitions (queue.maintain()); a default partition catches rows no partition covers yet.

do $roles$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'andal_monitor') then
        begin
            create role andal_monitor nologin;
        exception when insufficient_privilege then
            raise exception 'andal needs the role andal_monitor and may not create it'
                using errcode = '42501',
                hint = 'Have a superuser run: create role andal_monitor nologin; '
                'or grant CREATEROLE to the installing role.';
        end;
    end if;
end
$roles$;

grant usage on schema queue to andal_monitor;
grant usage on schema cache to andal_monitor;

alter table queue.queues
add column paused boolean not null default false,
add column history_retention interval
constraint queues_history_retention_check check (history_retention > '0');

-- The claim's pause probe reads this (usually empty) index.
create index queues_paused_idx on queue.queues (queue) where paused;

alter table queue.jobs
add column abort_requested_at timestamptz,
add column watched boolean not null default false;

create table queue.history (
    job_id bigint not null,
    queue text not null,
    category text,
    priority int not null,
    state text not null
    constraint history_state_check check (state in ('completed', 'dead', 'cancelled')),
    payload jsonb not null,
    attempt int not null,
    max_attempts int not null,
    enqueued_at timestamptz not null,
    started_at timestamptz,
    finished_at timestamptz not null default now(),
    worker text,
    result jsonb,
    errors jsonb not null default '[]',
    keep_until timestamptz not null
) partition by range (keep_until);

create index history_job_idx on queue.history (job_id);
create index history_queue_idx on queue.history (queue, job_id);
create table queue.history_default partition of queue.history default;

-- How wide queue.maintain() makes new history partitions (see queue.configure_history).
create table queue.history_settings (
    id boolean primary key default true constraint history_settings_single check (id),
    partition_width interval not null default '1 hour'
    constraint history_settings_width_check check (partition_width >= '1 second'),
    updated_at timestamptz not null default now()
);
insert into queue.history_settings default values;

-- What queue.job and queue.jobs_by return: one job as andal remembers it.
create type queue.job_info as (
    job_id bigint,
    state text,
    queue text,
    category text,
    priority int,
    attempts int,
    max_attempts int,
    enqueued_at timestamptz,
    available_at timestamptz,
    started_at timestamptz,
    finished_at timestamptz,
    worker text,
    lease_expires_at timestamptz,
    abort_requested_at timestamptz,
    result jsonb,
    errors jsonb,
    kept_until timestamptz
);

revoke all on queue.history, queue.history_default, queue.history_settings from public;
