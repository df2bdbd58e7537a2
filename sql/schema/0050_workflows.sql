-- 0050: workflows, a job that waits for other jobs. Run once, never edited after release (add
-- a new number instead).
--
-- * queue.jobs gains the status 'waiting' (a job enqueued with `after` whose parents have not
--   all ended: never claimed, as the claim indexes cover status 'pending' only), the counter
--   waiting_on (its parents not ended yet) and the flag workflow (the job has parents or
--   children: its end runs queue._workflow_ended; false for every other job, so their ends
--   cost nothing more). Added without a table rewrite; the checks are validated once.
-- * queue.job_edges: one row per (parent, child); open while the parent has not ended (it is
--   then counted in the child's waiting_on). The parent's end reads its edges by the primary
--   key, a child's parents are read by job_edges_child_idx.
-- * queue.workflow_results: the end (state, result) of a parent that had children, kept while
--   an edge to it remains, whatever its queue's keep_results (queue.parent_results reads it).

alter table queue.jobs
drop constraint jobs_status_check,
drop constraint jobs_running_check;
alter table queue.jobs
add constraint jobs_status_check check (status in ('waiting', 'pending', 'running')),
add constraint jobs_running_check check (
    status <> 'running' or (token is not null and lease_expires_at is not null)
),
add column waiting_on int not null default 0,
add column workflow boolean not null default false;

create table queue.job_edges (
    parent_id bigint not null,
    child_id bigint not null,
    child_queue text not null,
    on_parent_failure text not null
    constraint job_edges_on_parent_failure_check check (on_parent_failure in ('cancel', 'run')),
    open boolean not null default true,
    constraint job_edges_pkey primary key (parent_id, child_id)
) with (fillfactor = 80);
create index job_edges_child_idx on queue.job_edges (child_id);

create table queue.workflow_results (
    job_id bigint primary key,
    state text not null
    constraint workflow_results_state_check check (state in ('completed', 'dead', 'cancelled')),
    result jsonb,
    finished_at timestamptz not null default now()
);

revoke all on queue.job_edges, queue.workflow_results from public;

-- A child cancelled because a parent ended dead or cancelled is a dead letter with its own
-- reason (its state is cancelled).
alter table queue.dead_letters
drop constraint dead_letters_reason_check,
add constraint dead_letters_reason_check check (
    reason in ('exhausted', 'non_retryable', 'cancelled', 'parent_failed')
);
