-- queue.parent_results: the parents of a job (the jobs its enqueue named in `after`), one row
-- each in id order: parent_id, state (as queue.job tells it: waiting ... running while live,
-- completed, dead or cancelled once ended) and result (a completed parent's result, kept
-- for its children whatever its queue's keep_results, while one of them is live). A job
-- without parents, or one andal does not remember, gives no row; a job's parents are
-- known until it ends (a child cancelled because a parent failed keeps them, for
-- requeue_dead with_children). Raises: 22004 null job_id.
create or replace function queue.parent_results(job_id bigint)
returns table (parent_id bigint, state text, result jsonb)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
set jit = off
as $$
#variable_conflict use_column
begin
    if parent_results.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return query
    -- a parent that completed without a result keeps no row: one andal finds neither live
    -- nor dead (nor in its history or results) completed
    select e.parent_id, coalesce(r.state, k.state, 'completed'), coalesce(r.result, k.result)
    from queue.job_edges as e
    left join queue.workflow_results as r on r.job_id = e.parent_id
    left join lateral (select x.state, x.result from queue.job(e.parent_id) as x) as k
        on r.job_id is null
    where e.child_id = parent_results.job_id
    order by e.parent_id;
end
$$;

-- queue.child_jobs: the children of a job (the jobs that named it in `after` and are live,
-- or were cancelled because it failed), one row each in id order: child_id, state, and open
-- (true while the child still counts this job among the parents it waits for).
-- Raises: 22004 null job_id.
create or replace function queue.child_jobs(job_id bigint)
returns table (child_id bigint, state text, open boolean)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
set jit = off
as $$
#variable_conflict use_column
begin
    if child_jobs.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return query
    select e.child_id, k.state,
        k.state = 'waiting' and exists (select from queue.jobs as p where p.id = e.parent_id)
    from queue.job_edges as e
    left join lateral (select x.state from queue.job(e.child_id) as x) as k on true
    where e.parent_id = child_jobs.job_id
    order by e.child_id;
end
$$;

comment on function queue.parent_results(bigint) is
'The parents of a job: id, state and (kept) result of each.';
comment on function queue.child_jobs(bigint) is
'The children of a job: id, state, and whether each still waits for it.';
revoke all on function queue.parent_results(bigint) from public;
revoke all on function queue.child_jobs(bigint) from public;
grant execute on function queue.parent_results(bigint)
to andal_producer, andal_worker, andal_admin, andal_monitor;
grant execute on function queue.child_jobs(bigint)
to andal_producer, andal_worker, andal_admin, andal_monitor;
