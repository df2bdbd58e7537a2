-- Job states: the one vocabulary of a job's state, and the one mapping from the stored
-- columns to it. queue.states() lists the vocabulary; queue._job_state (a live row),
-- queue._ended_state (a dead letter) and queue._job_name (the name queue.job gives a state)
-- are the mapping, used by queue.job, queue.jobs_by, queue.status, queue.stats (and through
-- it queue.metrics), the dead-lettering and the workflows, and read by Python
-- (andal.jobs.STATES, tested equal to queue.states()).
--
-- The vocabulary, in a job's order of life:
--   waiting    queue.jobs, status 'waiting': waits for its parents (enqueue with after)
--   scheduled  queue.jobs, status 'pending', not yet due, no attempt yet: waits for its delay
--   ready      queue.jobs, status 'pending', due (available_at <= now()): claimable
--   running    queue.jobs, status 'running': claimed, under a token and a lease
--   failed     queue.jobs, status 'pending', not yet due, attempt > 0: an attempt failed and
--              the retry waits for its backoff
--   completed  queue.history, queue.results, queue.completions
--   dead       queue.dead_letters (or history), reason other than cancelled / parent_failed
--   cancelled  queue.dead_letters (or history), reason cancelled or parent_failed
-- Two names predate this vocabulary and stay for compatibility (a public function's output
-- is never changed in place): queue.job and queue.jobs_by say 'pending' for ready
-- (queue._job_name), and the scheduled columns of queue.status, queue.stats and
-- queue.metrics count every live job not yet due: the states scheduled and failed.

-- _job_state: the state of a live job from its row: status, due (available_at <= now())
-- and retried (attempt > 0). Called per group by queue.status and queue.stats, per row by
-- queue.job and queue.jobs_by (through queue._live_state).
create or replace function queue._job_state(status text, due boolean, retried boolean)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select case
        when status = 'running' then 'running'
        when status = 'waiting' then 'waiting'
        when due then 'ready'
        when retried then 'failed'
        else 'scheduled'
    end
$$;

-- _ended_state: the state of a dead letter from its reason.
create or replace function queue._ended_state(reason text)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select case when reason in ('cancelled', 'parent_failed') then 'cancelled' else 'dead' end
$$;

-- _job_name: the name queue.job and queue.jobs_by give a state: 'pending' for ready (their
-- output predates the vocabulary), the state itself otherwise.
create or replace function queue._job_name(state text)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select case when state = 'ready' then 'pending' else state end
$$;

-- _live_counts: the live jobs of each queue and category ('' for none) by state, for
-- queue.status and queue.stats: ready, scheduled (not yet due: the states scheduled and
-- failed), running, waiting, and the oldest ready job's available_at. Groups the live table
-- by the columns of a state first, so queue._job_state is called once per group.
create or replace function queue._live_counts()
returns table (
    queue text, category text, ready bigint, scheduled bigint, running bigint, waiting bigint,
    oldest_ready timestamptz
)
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select g.queue, g.category,
        coalesce(sum(g.n) filter (where s.state = 'ready'), 0)::bigint,
        coalesce(sum(g.n) filter (where s.state in ('scheduled', 'failed')), 0)::bigint,
        coalesce(sum(g.n) filter (where s.state = 'running'), 0)::bigint,
        coalesce(sum(g.n) filter (where s.state = 'waiting'), 0)::bigint,
        min(g.first_at) filter (where s.state = 'ready')
    from (
        select j.queue, coalesce(j.category, '') as category, j.status,
            j.available_at <= now() as due, j.attempt > 0 as retried, count(*) as n,
            min(j.available_at) as first_at
        from queue.jobs as j group by 1, 2, 3, 4, 5
    ) as g
    cross join lateral (select queue._job_state(g.status, g.due, g.retried) as state) as s
    group by 1, 2
$$;

-- queue.states: the vocabulary, one row per state in a job's order of life: its name, what
-- it means, whether the job is live (a row of queue.jobs), and the name queue.job and
-- queue.jobs_by give it. Reads nothing. Raises nothing.
create or replace function queue.states()
returns table (state text, meaning text, live boolean, job_state text)
language sql immutable
security definer  -- calls queue._job_name, granted to nobody
set search_path = pg_catalog, pg_temp
as $$
    select v.state, v.meaning, v.live, queue._job_name(v.state)
    from (values
        (1, 'waiting', 'waits for its parents to end (enqueued with after)', true),
        (2, 'scheduled', 'waits for its delay (no attempt yet)', true),
        (3, 'ready', 'claimable now', true),
        (4, 'running', 'claimed: a worker holds it under a token and a lease', true),
        (5, 'failed', 'an attempt failed; the retry waits for its backoff', true),
        (6, 'completed', 'done', false),
        (7, 'dead', 'out of attempts, or failed with retryable false', false),
        (8, 'cancelled', 'withdrawn by queue.cancel, or by the failure of a parent', false)
    ) as v (n, state, meaning, live)
    order by v.n
$$;

comment on function queue.states() is
'The job states, in a job''s order of life: name, meaning, live, and the name queue.job gives it.';
comment on function queue._job_state(text, boolean, boolean) is
'Private: the state (waiting, scheduled, ready, running, failed) of a live job.';
comment on function queue._ended_state(text) is
'Private: the state (dead, cancelled) of a dead letter from its reason.';
comment on function queue._live_counts() is
'Private: the live jobs of each queue and category by state (for status and stats).';
comment on function queue._job_name(text) is
'Private: the name queue.job gives a state (pending for ready).';
revoke all on function queue.states() from public;
revoke all on function queue._job_state(text, boolean, boolean) from public;
revoke all on function queue._ended_state(text) from public;
revoke all on function queue._job_name(text) from public;
revoke all on function queue._live_counts() from public;
grant execute on function queue.states()
to andal_producer, andal_worker, andal_admin, andal_monitor;
