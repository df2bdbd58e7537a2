-- andal_check: the history of a reliability run and its checker. TEST-ONLY: the reliability
-- fixtures install this into their own test database; andal's installer never does.
--
-- The history, on the database clock (clock_timestamp() at each insert):
-- * enqueued: every job a test enqueued, inserted in the SAME transaction as queue.enqueue /
--   enqueue_many, so a row exists exactly when the enqueue committed.
-- * attempt_log (append-only): per attempt (its fencing token), a 'start' row when the
--   handler begins (after the claim), an 'end' row when it returns ('ok' / 'error', before the
--   outcome is reported), and 'outcome' rows: what andal answered to the attempt's report:
--   completed / retried / dead / released (accepted) or lease_lost / unknown (refused).
-- * effects (append-only): a transactional handler's own write, in the job's transaction.
-- Completion evidence also comes from queue.results (queues with keep_results: the handlers
-- return {"token": ...}, stored in the completing transaction).
--
-- andal_check.check() returns the four counts every reliability test asserts to be 0:
-- * lost: enqueued (committed) jobs that were never completed by a run of theirs nor
--   dead-lettered (a job still live at the end of a test counts as lost);
-- * duplicated: jobs completed by more than one attempt, with more than one transactional
--   effect, completed and also dead-lettered, or completed and still live;
-- * overlapping: an attempt of a job that started while an ACCEPTED attempt of the same job
--   (andal took its outcome, or its completion is on record) was running, i.e. inside the
--   accepted attempt's handler interval [start, end]. An accepted attempt held an unexpired
--   lease from its claim until its report, and a claim can take a job only once its lease
--   expired (or it was reported), so this happens only when two unexpired leases of one job
--   coexisted, or a stale report was accepted. (A stale attempt that started first and is
--   refused may legitimately still run while the next one starts: it is not accepted.)
-- * over_limit: moments when more accepted attempts of one category were running than the
--   category's limit (a sweep over their handler intervals; ends sort before starts at the
--   same instant, so touching intervals are not counted).
-- andal_check.violations() lists the offending jobs with a detail line.

create schema if not exists andal_check;

create table if not exists andal_check.enqueued (
    job_id bigint primary key,
    queue text not null,
    category text,
    enqueued_at timestamptz not null default clock_timestamp()
);

create table if not exists andal_check.attempt_log (
    seq bigint generated always as identity primary key,
    job_id bigint not null,
    attempt int not null,
    token uuid not null,
    worker text not null,
    queue text,
    category text,
    event text not null constraint attempt_log_event_check
    check (event in ('start', 'end', 'outcome')),
    outcome text,
    at timestamptz not null default clock_timestamp(),
    claimed_at timestamptz,       -- start rows: queue.jobs.claimed_at (the claim's now())
    available_at timestamptz,     -- start rows: queue.jobs.available_at seen by the claim
    lease_expires_at timestamptz, -- start rows: the lease the claim returned
    detail text
);
create index if not exists attempt_log_token_idx on andal_check.attempt_log (token, event, seq);
create index if not exists attempt_log_job_idx on andal_check.attempt_log (job_id);

create table if not exists andal_check.effects (
    job_id bigint not null,
    token uuid not null,
    worker text,
    at timestamptz not null default clock_timestamp()
);
create index if not exists effects_job_idx on andal_check.effects (job_id);

-- Append-only: updates and deletes are refused (the fixtures TRUNCATE between tests).
create or replace function andal_check.append_only() returns trigger
language plpgsql
as $$
begin
    raise exception 'andal_check.% is append-only', tg_table_name using errcode = '55000';
end
$$;

do $$
declare
    v_table text;
begin
    foreach v_table in array array['enqueued', 'attempt_log', 'effects'] loop
        execute format('drop trigger if exists %I on andal_check.%I',
            v_table || '_append_only', v_table);
        execute format('create trigger %I before update or delete on andal_check.%I '
            'for each statement execute function andal_check.append_only()',
            v_table || '_append_only', v_table);
    end loop;
end
$$;

-- A uuid from text, or null when it is not one (results of other queues may hold anything).
create or replace function andal_check.uuid_or_null(value text) returns uuid
language sql immutable
as $$
    select case when value ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        then value::uuid end
$$;

-- One row per attempt that started a handler (first start row of its token).
create or replace view andal_check.attempts as
with s as (
    select distinct on (l.token) l.token, l.job_id, l.attempt, l.worker, l.queue, l.category,
        l.at as started_at, l.claimed_at, l.available_at, l.lease_expires_at
    from andal_check.attempt_log as l
    where l.event = 'start'
    order by l.token, l.seq
),
e as (
    select distinct on (l.token) l.token, l.at as ended_at, l.outcome as handler_outcome
    from andal_check.attempt_log as l
    where l.event = 'end'
    order by l.token, l.seq
),
o as (
    select l.token,
        array_agg(l.outcome order by l.seq) as outcomes,
        min(l.at) filter (
            where l.outcome in ('completed', 'retried', 'dead', 'released')
        ) as accepted_at
    from andal_check.attempt_log as l
    where l.event = 'outcome'
    group by l.token
)
select s.token, s.job_id, s.attempt, s.worker, s.queue, s.category, s.started_at,
    s.claimed_at, s.available_at, s.lease_expires_at, e.ended_at, e.handler_outcome,
    o.outcomes, o.accepted_at
from s
left join e on e.token = s.token
left join o on o.token = s.token;

-- Every piece of evidence that a job was completed, with the attempt (token) it names.
create or replace view andal_check.completions as
select l.job_id, l.token, 'outcome'::text as source
from andal_check.attempt_log as l
where l.event = 'outcome' and l.outcome = 'completed'
union all
select r.job_id, andal_check.uuid_or_null(r.result ->> 'token'), 'result'
from queue.results as r
union all
select f.job_id, f.token, 'effect'
from andal_check.effects as f;

-- Attempts whose outcome andal accepted: their handler interval lies inside an unexpired
-- lease. finished_at: the handler's end, else the accepted outcome's time.
create or replace view andal_check.accepted as
with done as (
    select distinct c.job_id, c.token from andal_check.completions as c where c.token is not null
)
select a.*, coalesce(a.ended_at, a.accepted_at, 'infinity') as finished_at
from andal_check.attempts as a
left join done as d on d.job_id = a.job_id and d.token = a.token
where a.accepted_at is not null or d.token is not null;

create or replace function andal_check.violations()
returns table (kind text, job_id bigint, category text, detail text)
language sql
stable
set jit = off
as $$
    -- lost: committed enqueues with no completion by a recorded run, and not dead
    with ran_and_completed as (
        select distinct c.job_id
        from andal_check.completions as c
        join andal_check.attempts as a on a.job_id = c.job_id and a.token = c.token
    )
    select 'lost', e.job_id, e.category,
        format('enqueued at %s on %s; %s', e.enqueued_at, e.queue,
            coalesce((select format('still live: %s, attempt %s', j.status, j.attempt)
                      from queue.jobs as j where j.id = e.job_id),
                     'gone without a completion on record'))
    from andal_check.enqueued as e
    where not exists (select from ran_and_completed as r where r.job_id = e.job_id)
      and not exists (select from queue.dead_letters as d where d.job_id = e.job_id)

    union all
    -- duplicated: more than one attempt completed the job, or two effects committed
    select 'duplicated', c.job_id, null,
        format('%s completion records from %s attempts (%s)', count(*),
            count(distinct c.token), string_agg(c.source || ':' || coalesce(c.token::text, '?'),
                ', ' order by c.source))
    from andal_check.completions as c
    group by c.job_id
    having count(distinct c.token) > 1 or count(*) filter (where c.source = 'effect') > 1

    union all
    select 'duplicated', d.job_id, d.category, 'completed and also dead-lettered (' || d.reason || ')'
    from queue.dead_letters as d
    where exists (select from andal_check.completions as c where c.job_id = d.job_id)

    union all
    select 'duplicated', j.id, j.category, 'completed but still live (' || j.status || ')'
    from queue.jobs as j
    where exists (select from andal_check.completions as c where c.job_id = j.id)

    union all
    -- overlapping: another attempt of the job started while an accepted one was running
    select 'overlapping', a.job_id, a.category,
        format('attempt %s by %s started at %s, inside accepted attempt %s by %s [%s, %s]',
            b.attempt, b.worker, b.started_at,
            a.attempt, a.worker, a.started_at, a.finished_at)
    from andal_check.accepted as a
    join andal_check.attempts as b on b.job_id = a.job_id and b.token <> a.token
    where b.started_at >= a.started_at and b.started_at < a.finished_at

    union all
    -- over_limit: a sweep of accepted attempts per category
    select 'over_limit', r.job_id, r.category,
        format('%s running at %s, limit %s', r.n, r.t, coalesce(k.max_running, 1))
    from (
        select v.category, v.t, v.d, v.job_id,
            sum(v.d) over (partition by v.category order by v.t, v.d, v.job_id
                           rows between unbounded preceding and current row) as n
        from (
            select a.category, a.started_at as t, 1 as d, a.job_id
            from andal_check.accepted as a where a.category is not null
            union all
            select a.category, a.finished_at, -1, a.job_id
            from andal_check.accepted as a where a.category is not null
        ) as v
    ) as r
    left join queue.categories as k on k.category = r.category
    where r.d = 1 and r.n > coalesce(k.max_running, 1)
$$;

create or replace function andal_check.check()
returns table (
    lost bigint, duplicated bigint, overlapping bigint, over_limit bigint,
    jobs bigint, attempts bigint
)
language sql
stable
set jit = off
as $$
    select
        count(*) filter (where v.kind = 'lost'),
        count(distinct v.job_id) filter (where v.kind = 'duplicated'),
        count(*) filter (where v.kind = 'overlapping'),
        count(*) filter (where v.kind = 'over_limit'),
        (select count(*) from andal_check.enqueued),
        (select count(distinct l.token) from andal_check.attempt_log as l where l.event = 'start')
    from andal_check.violations() as v
$$;
