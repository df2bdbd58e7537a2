-- 0005: the bounds every public function enforces, and the cache's refresh queues. Run once,
-- never edited after release (add a new number instead).

-- The bounds on what a caller may ask for, one row for the database (tune with UPDATE as the
-- owner). Each interval bound limits the effect of an argument: now() + value must lie
-- between now() and now() + the bound. Zero priority and zero delay are always allowed.
create table queue.config (
    id boolean primary key default true constraint config_single check (id),
    -- lease of a claim or a queue, a heartbeat's extension
    max_lease interval not null default '1 day'
    constraint config_max_lease_check check (max_lease > '0' and max_lease <= '100 years'),
    -- delay of an enqueue or a release, a fail's retry_in, a queue's backoff base and cap
    max_delay interval not null default '1 year'
    constraint config_max_delay_check check (max_delay > '0' and max_delay <= '100 years'),
    min_priority int not null default -1000000,
    max_priority int not null default 1000000,
    -- a fail's error text, in bytes (longer ones are cut)
    max_error_bytes int not null default 65536
    constraint config_max_error_bytes_check check (max_error_bytes >= 1024),
    -- a result kept by a queue with keep_results, in bytes of JSON text
    max_result_bytes int not null default 1048576
    constraint config_max_result_bytes_check check (max_result_bytes > 0),
    constraint config_priority_check check (min_priority <= 0 and max_priority >= 0)
);
insert into queue.config default values;
revoke all on queue.config from public;

-- Queues a caller without the right to enqueue (a worker) may name as cache.get's
-- refresh_queue. Producers and admins may name any queue.
alter table cache.config add column refresh_queues text[] not null default '{}';

-- Ready gated jobs by queue and category: a claim that must leave full or paused categories
-- out reads each other category's best jobs here, never past the backlog of the ones left
-- out (queue.jobs_gated_idx holds them in one order, so a filter would walk them all). On an
-- expression that no other index has, so that the planner cannot pick jobs_gated_queue_idx
-- and filter its rows by category.
create index jobs_gated_pair_idx on queue.jobs (
    (array[queue, category]), priority desc, available_at, id
) where status = 'pending' and category is not null;

-- The prefix of this install's roles (<prefix>_producer, _worker, _admin): roles are
-- cluster-wide, so databases that must be kept apart are installed with prefixes of their own.
alter table queue.install_state add column role_prefix text not null default 'andal';
