-- 0014: workers register themselves, so that a worker's identity no longer depends on parsing
-- the names of its sessions (application_name is cut at 63 bytes, and any session can take
-- any name). Run once, never edited after release (add a new number instead).
--
-- * queue.worker_registrations: one row per live worker (queue.register_worker writes and
--   refreshes it, queue.unregister_worker removes it); a row whose worker has not refreshed
--   it within expire_after is no longer live (readers skip it, a registration deletes it).

create table queue.worker_registrations (
    worker text primary key,
    host text not null,
    pid int not null constraint worker_registrations_pid_check check (pid >= 0),
    queues text [] not null default '{}',
    slots int not null constraint worker_registrations_slots_check check (slots >= 0),
    version text,
    started_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    expire_after interval not null default '1 minute'
    constraint worker_registrations_expire_after_check check (expire_after > '0')
);

revoke all on queue.worker_registrations from public;
