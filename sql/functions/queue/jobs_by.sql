-- queue.jobs_by: jobs of a queue (null: every queue) in a state (null: every state), newest
-- id first, one page at a time: pass the last job_id of a page as `before` to get the next
-- (keyset paging: a page costs the same however deep it is, and jobs enqueued meanwhile do
-- not shift it). The columns and the sources are those of queue.job, with the same
-- precedence: each job appears once, as queue.job(job_id) describes it.
-- Reads the live table by primary key, so a page of a rare state among many live jobs
-- reads many rows: for operators and dashboards, not the hot path.
-- Raises: 22023 unknown state, lim outside 1..1000, bad queue name.
create or replace function queue.jobs_by(
    queue text default null,
    state text default null,
    before bigint default null,
    lim int default 100
)
returns setof queue.job_info
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_live boolean;
    v_done boolean;
begin
    perform queue._check_name(jobs_by.queue, 'queue', false);
    -- the states as queue.job names them (queue.states())
    if jobs_by.state is not null
       and not exists (select from queue.states() as s where s.job_state = jobs_by.state) then
        raise exception 'state must be one of % (got %)',
            (select string_agg(s.job_state, ', ') from queue.states() as s), jobs_by.state
            using errcode = '22023';
    end if;
    if jobs_by.lim is null or jobs_by.lim not between 1 and 1000 then
        raise exception 'lim must be between 1 and 1000 (got %)', jobs_by.lim
            using errcode = '22023';
    end if;
    v_live := jobs_by.state is null or exists (
        select from queue.states() as s where s.job_state = jobs_by.state and s.live
    );
    v_done := jobs_by.state is null or not v_live;
    return query
    select s.job_id, s.state, s.queue, s.category, s.priority, s.attempts, s.max_attempts,
        s.enqueued_at, s.available_at, s.started_at, s.finished_at, s.worker,
        s.lease_expires_at, s.abort_requested_at, s.result, s.errors, s.kept_until
    from (
        (select j.id as job_id,
            queue._live_state(j.status, j.available_at, j.attempt) as state,
            j.queue, j.category, j.priority, j.attempt as attempts, j.max_attempts,
            j.enqueued_at, j.available_at, j.claimed_at as started_at,
            null::timestamptz as finished_at, j.worker, j.lease_expires_at,
            j.abort_requested_at, null::jsonb as result, j.errors,
            null::timestamptz as kept_until
         from queue.jobs as j
         where v_live
           and (jobs_by.queue is null or j.queue = jobs_by.queue)
           and (jobs_by.before is null or j.id < jobs_by.before)
           and (jobs_by.state is null
                or queue._live_state(j.status, j.available_at, j.attempt) = jobs_by.state)
         order by j.id desc
         limit jobs_by.lim)
        union all
        (select h.job_id, h.state, h.queue, h.category, h.priority, h.attempt, h.max_attempts,
            h.enqueued_at, null, h.started_at, h.finished_at, null, null, null, h.result,
            h.errors, h.keep_until
         from queue.history as h
         where v_done
           and (jobs_by.queue is null or h.queue = jobs_by.queue)
           and (jobs_by.before is null or h.job_id < jobs_by.before)
           and (jobs_by.state is null or h.state = jobs_by.state)
           and not exists (select from queue.jobs as j where j.id = h.job_id)
           and not exists (
               select from queue.history as n
               where n.job_id = h.job_id
                 and (coalesce(n.finished_seq, 0), n.finished_at)
                     > (coalesce(h.finished_seq, 0), h.finished_at))
         order by h.job_id desc
         limit jobs_by.lim)
        union all
        (select d.job_id,
            queue._ended_state(d.reason),
            d.queue, d.category, d.priority, d.attempt, d.max_attempts, d.enqueued_at, null,
            null, d.died_at, null, null, null, null, d.errors, null
         from queue.dead_letters as d
         where v_done
           and (jobs_by.queue is null or d.queue = jobs_by.queue)
           and (jobs_by.before is null or d.job_id < jobs_by.before)
           and (jobs_by.state is null
                or jobs_by.state = queue._ended_state(d.reason))
           and not exists (select from queue.jobs as j where j.id = d.job_id)
           and not exists (select from queue.history as h where h.job_id = d.job_id)
         order by d.job_id desc
         limit jobs_by.lim)
        union all
        (select r.job_id, 'completed', r.queue, null, null, null, null, null, null, null,
            r.completed_at, null, null, null, r.result, null, null
         from queue.results as r
         where v_done and (jobs_by.state is null or jobs_by.state = 'completed')
           and (jobs_by.queue is null or r.queue = jobs_by.queue)
           and (jobs_by.before is null or r.job_id < jobs_by.before)
           and not exists (select from queue.jobs as j where j.id = r.job_id)
           and not exists (select from queue.history as h where h.job_id = r.job_id)
           and not exists (select from queue.dead_letters as d where d.job_id = r.job_id)
         order by r.job_id desc
         limit jobs_by.lim)
    ) as s
    order by s.job_id desc
    limit jobs_by.lim;
end
$$;

comment on function queue.jobs_by(text, text, bigint, int) is
'Jobs of a queue in a state, newest first, keyset-paged by id (before => last id of the page).';
revoke all on function queue.jobs_by(text, text, bigint, int) from public;
grant execute on function queue.jobs_by(text, text, bigint, int)
to andal_producer, andal_worker, andal_admin, andal_monitor;
