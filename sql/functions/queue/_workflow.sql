-- Workflows: a job that waits for other jobs (its parents, named by `after` at enqueue). The
-- one home of the rule; private, granted to nobody. The dependency is a table of edges
-- (queue.job_edges) and, on the child, the counter of its parents not ended yet
-- (queue.jobs.waiting_on): a parent's end reads its edges by primary key and writes each
-- child once (for all its ended parents of the statement), never an edge, never a scan. A
-- child waits with status 'waiting' and becomes claimable ('pending') in the transaction
-- that ends its last parent, whichever client ended it. The row of a job tells its roles:
-- workflow (it has children) and has_parents (it is a child); a job with neither pays
-- nothing at its end.
--
-- The failure policy of a child (on_parent_failure): 'cancel' (the default) — a parent that
-- ends dead or cancelled cancels its waiting children, reason 'parent_failed', and so
-- theirs, recursively, in the same transaction; 'run' — the parent's end counts as any
-- other, the child runs and reads what happened (queue.parent_results).
--
-- Races: the enqueue of a child locks its live parents (FOR KEY SHARE, in id order) before
-- it writes its edges, and every end of a job deletes its row, so a parent ends either
-- before the lock (the child sees it ended) or after the child committed (its end sees the
-- edge). Children are locked in id order before they are counted down: two parents ending
-- at once serialise on the child's row, and exactly one of them sees the count reach 0.

-- _workflow_check: the arguments of an enqueue with `after`, checked before anything is
-- written. Returns the distinct parent ids, sorted (empty: no parent). An id is valid when
-- andal issued it (1 .. the last value of the job id sequence), so a child can only name
-- jobs created before it: a workflow is acyclic by construction.
-- Raises: 22004 a null element; 22023 an id never issued, on_parent_failure not 'cancel' or
-- 'run', more than 100000 parents, a nested array.
create or replace function queue._workflow_check(after bigint[], on_parent_failure text)
returns bigint[]
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids bigint[];
    v_last bigint;
    v_called boolean;
    v_bad bigint;
begin
    if on_parent_failure is null or on_parent_failure not in ('cancel', 'run') then
        raise exception 'on_parent_failure must be ''cancel'' or ''run'' (got %)',
            coalesce(on_parent_failure, 'null') using errcode = '22023';
    end if;
    if array_ndims(after) > 1 then
        raise exception 'after must be a one-dimensional array of job ids'
            using errcode = '22023';
    end if;
    if array_position(after, null) is not null then
        raise exception 'after must not contain null' using errcode = '22004';
    end if;
    v_ids := array(select distinct u.id from unnest(after) as u (id) order by u.id);
    if cardinality(v_ids) > 100000 then
        raise exception 'after names % jobs, over the limit of 100000', cardinality(v_ids)
            using errcode = '22023';
    end if;
    execute format('select last_value, is_called from %s',
        pg_get_serial_sequence('queue.jobs', 'id')) into v_last, v_called;
    if not v_called then
        v_last := v_last - 1;
    end if;
    select u.id into v_bad from unnest(v_ids) as u (id)
    where u.id < 1 or u.id > v_last order by u.id limit 1;
    if v_bad is not null then
        raise exception 'after names job %, which andal never issued', v_bad
            using errcode = '22023',
            hint = 'Name jobs created before this one (their ids, as enqueue returned them).';
    end if;
    return v_ids;
end
$$;

-- _workflow_wait: make the just-inserted jobs `job_ids` (of one queue) children of `parents`
-- (from queue._workflow_check). Live parents are locked and counted; a parent already
-- completed (or forgotten) counts as ended; a parent dead or cancelled applies the policy
-- at once (cancel: the children are cancelled now, reason parent_failed). The children wait
-- (status 'waiting') while a parent is live, else stay pending.
create or replace function queue._workflow_wait(
    job_ids bigint[], job_queue text, parents bigint[], on_parent_failure text
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_live bigint[];
    v_failed bigint;
    v_child bigint;
begin
    if cardinality(parents) = 0 or cardinality(job_ids) = 0 then
        return;
    end if;
    v_live := array(
        select l.id from (
            select j.id from queue.jobs as j where j.id = any (parents)
            order by j.id for key share
        ) as l
    );
    select d.job_id into v_failed from queue.dead_letters as d
    where d.job_id = any (parents) and not d.job_id = any (v_live)
    order by d.job_id limit 1;
    -- the live parents are marked as having children (their end counts them down), in id
    -- order; a parent's first child is its only child (read from its row at its
    -- completion), a second one makes it read its edges
    update queue.jobs as j
    set workflow = true,
        only_child = case when not j.workflow and cardinality(job_ids) = 1 then job_ids[1] end
    where j.id in (
        select p.id from queue.jobs as p
        where p.id = any (v_live) and (not p.workflow or p.only_child is not null)
        order by p.id for no key update
    );
    -- a child waits while a parent is live, and until it is cancelled just below
    update queue.jobs as j
    set has_parents = true, waiting_on = cardinality(v_live),
        status = case when cardinality(v_live) > 0
            or (v_failed is not null and on_parent_failure = 'cancel')
            then 'waiting' else j.status end
    where j.id = any (job_ids) and j.queue = job_queue;
    insert into queue.job_edges (parent_id, child_id, child_queue, on_parent_failure)
    select p.id, c.id, job_queue, on_parent_failure
    from unnest(parents) as p (id) cross join unnest(job_ids) as c (id);
    if v_failed is not null and on_parent_failure = 'cancel' then
        foreach v_child in array job_ids loop
            perform queue._workflow_cancel(v_child, v_failed);
        end loop;
    end if;
end
$$;

-- _workflow_cancel: cancel a waiting child because its parent `parent_id` ended dead or
-- cancelled: it moves to the dead letters with reason 'parent_failed' (queue._bury, whose
-- end of the child cancels its own waiting children in turn) and is settled as any
-- cancelled job. A child no longer waiting (cancelled meanwhile) is left alone.
create or replace function queue._workflow_cancel(child_id bigint, parent_id bigint)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job record;
begin
    select j.id, j.queue, j.category, j.cache_key, j.errors into v_job
    from queue.jobs as j where j.id = child_id and j.status = 'waiting' for update;
    if v_job.id is null then
        return;
    end if;
    perform queue._bury(v_job.id, 'parent_failed',
        format('parent job %s ended dead or cancelled', parent_id), v_job.errors);
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'cancelled', null, null,
        v_job.cache_key);
end
$$;

-- _workflow_ended: jobs ended (reason 'completed', else their dead letter's reason):
-- `parents`, those with children (results: theirs, parallel, when completed; only_children:
-- each one's only child from its row, null when it has several), and `children`, those with
-- parents (either may be null). Called once per ending path
-- (queue.complete, queue.complete_many, queue._bury) for the jobs that have either role.
-- * As children: their edges to their parents go (and a parent's kept end with its last
--   edge), except for a child cancelled because a parent failed: requeue_dead
--   (with_children) brings it back along them.
-- * As parents: their end (a result, or a failure) is kept (queue.workflow_results) while
--   an edge to them remains; each child is counted down once per ended parent, in one
--   statement (a child at 0 is pending now, and its queue gets the hint); on a failure the
--   children with the policy 'cancel' are cancelled instead (queue._workflow_cancel).
drop function if exists queue._workflow_ended(bigint[], text, jsonb[]);
drop function if exists queue._workflow_ended(bigint[], bigint[], text, jsonb[]);
create or replace function queue._workflow_ended(
    parents bigint[], children bigint[], reason text, results jsonb[] default null,
    only_children bigint[] default null
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_failed boolean := reason <> 'completed';
    v_closed record;
begin
    if children is not null and reason <> 'parent_failed' then
        perform queue._workflow_forget(children);
    end if;
    if parents is null then
        return;
    end if;
    -- the end of each parent is kept for its children: a result, or a failure (a completion
    -- without a result keeps nothing: queue.parent_results tells it from its absence)
    if v_failed or cardinality(array_remove(results, null)) > 0 then
        perform queue._workflow_keep(parents, reason, results);
    end if;
    -- per child: how many of its parents ended (an only child from the parent's row, a
    -- completion's; the others from the edges), whether to cancel it
    with closed as (
        select u.child as child_id, null::text as child_queue, 'run' as on_parent_failure,
            u.id as parent_id
        from unnest(parents, only_children) as u (id, child)
        where u.child is not null and not v_failed
        union all
        select e.child_id, e.child_queue, e.on_parent_failure, e.parent_id
        from queue.job_edges as e
        where e.parent_id = any (array(
            select u.id from unnest(parents, coalesce(only_children, '{}')) as u (id, child)
            where u.child is null or v_failed))
    )
    select array_agg(c.child_id order by c.child_id) as ids,
        array_agg(c.child_queue order by c.child_id) as queues,
        array_agg(c.n order by c.child_id) as ns,
        array_agg(c.parent_id order by c.child_id) filter (where c.cancel) as cancel_parents,
        array_agg(c.child_id order by c.child_id) filter (where c.cancel) as cancel_ids
    into v_closed
    from (
        -- one row per child (an only child has no queue here: the edges' one, when read)
        select c.child_id, max(c.child_queue) as child_queue, count(*)::int as n,
            min(c.parent_id) as parent_id,
            v_failed and bool_or(c.on_parent_failure = 'cancel') as cancel
        from closed as c group by c.child_id
    ) as c;
    for v_i in 1 .. coalesce(cardinality(v_closed.cancel_ids), 0) loop
        perform queue._workflow_cancel(v_closed.cancel_ids[v_i], v_closed.cancel_parents[v_i]);
    end loop;
    if v_closed.ids is not null then
        perform queue._workflow_count_down(v_closed.ids, v_closed.queues, v_closed.ns);
    end if;
end
$$;

-- _workflow_forget: the jobs `children` ended (not by a parent's failure): their edges go,
-- and the kept ends of their parents that no other child still needs.
create or replace function queue._workflow_forget(children bigint[]) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_gone bigint[];
begin
    with gone as (
        delete from queue.job_edges as e where e.child_id = any (children)
        returning e.parent_id
    )
    select array_agg(distinct g.parent_id) into v_gone from gone as g;
    if v_gone is not null then
        delete from queue.workflow_results as r
        where r.job_id = any (v_gone)
          and not exists (select from queue.job_edges as e where e.parent_id = r.job_id);
    end if;
end
$$;

-- _workflow_keep: keep the ends of the parents `parents` for their children (state, and the
-- result of a completion; a completion without a result keeps no row). Raises 54000 for a
-- result over queue.config.max_result_bytes, as a kept result.
create or replace function queue._workflow_keep(parents bigint[], reason text, results jsonb[])
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit int := (queue._limits()).max_result_bytes;
begin
    insert into queue.workflow_results as r (job_id, state, result)
    select u.id,
        case when reason = 'completed' then 'completed' else queue._ended_state(reason) end,
        case when octet_length(u.result::text) > v_limit
            then queue._check_result(u.result, 'result') else u.result end
    from unnest(parents, coalesce(results, '{}')) as u (id, result)
    where u.id is not null and (reason <> 'completed' or u.result is not null)
    on conflict (job_id) do update set state = excluded.state, result = excluded.result,
        finished_at = excluded.finished_at;
end
$$;

-- _workflow_count_down: count each waiting child `ids` (of queue `queues`, null when not
-- known) down by `ns`,
-- locked in id order first (concurrent ends never deadlock); a child at 0 is pending now
-- (claimable from now on, or at its delay) and its queue gets the hint. One statement
-- whatever the number of children (a fan-out of 10,000 included). A child no longer waiting
-- (cancelled meanwhile) is left alone.
create or replace function queue._workflow_count_down(ids bigint[], queues text[], ns int[])
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_queues text[];
begin
    perform from queue.jobs as j
    where j.id = any (ids) and j.status = 'waiting'
    order by j.id for no key update;
    with released as (
        update queue.jobs as j
        set waiting_on = j.waiting_on - w.n,
            status = case when j.waiting_on <= w.n then 'pending' else j.status end,
            available_at = case when j.waiting_on <= w.n
                then greatest(j.available_at, now()) else j.available_at end
        from unnest(ids, queues, ns) as w (id, queue, n)
        where j.id = w.id and (w.queue is null or j.queue = w.queue) and j.status = 'waiting'
        returning j.queue, j.status, j.available_at
    )
    select array_agg(distinct r.queue) filter (where r.status = 'pending'
        and r.available_at <= now()) into v_queues from released as r;
    for v_i in 1 .. coalesce(cardinality(v_queues), 0) loop
        perform queue._notify_ready(v_queues[v_i]);
    end loop;
end
$$;

-- _workflow_requeue: after queue.requeue_dead brought `job_id` back, bring back the
-- children cancelled because it failed (reason parent_failed), and theirs, recursively:
-- each waits again for its parents that are live (locked as at enqueue), counting the
-- others as ended; a child another failed parent still cancels stays a dead letter. A child
-- still waiting that counted a job's end (policy run) waits for it again. Returns how many
-- children came back.
create or replace function queue._workflow_requeue(job_id bigint) returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_frontier bigint[] := array[job_id];
    v_back bigint[];
    v_count int := 0;
begin
    update queue.jobs as j set workflow = true where j.id = job_id;
    loop
        update queue.jobs as j set waiting_on = j.waiting_on + c.n
        from (select e.child_id, count(*)::int as n from queue.job_edges as e
              where e.parent_id = any (v_frontier) group by e.child_id) as c
        where j.id = c.child_id and j.status = 'waiting';
        v_back := array(
            select distinct e.child_id from queue.job_edges as e
            join queue.dead_letters as d on d.job_id = e.child_id and d.reason = 'parent_failed'
            where e.parent_id = any (v_frontier)
              and not exists (
                  select from queue.job_edges as o
                  join queue.dead_letters as f on f.job_id = o.parent_id
                  where o.child_id = e.child_id and o.on_parent_failure = 'cancel')
            order by 1);
        exit when cardinality(v_back) = 0;
        perform queue._workflow_revive(v_back);
        v_count := v_count + cardinality(v_back);
        v_frontier := v_back;
    end loop;
    return v_count;
end
$$;

-- _workflow_revive: the dead letters `job_ids` (children cancelled because a parent failed)
-- are live again, waiting for their live parents (locked as at enqueue, and marked as
-- having children), pending at once when none is live.
create or replace function queue._workflow_revive(job_ids bigint[]) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    with back as (
        delete from queue.dead_letters as d where d.job_id = any (job_ids) returning d.*
    )
    insert into queue.jobs (
        id, queue, category, priority, payload, attempt, max_attempts, enqueued_at, errors,
        cache_key, status, workflow, has_parents
    ) overriding system value
    select b.job_id, b.queue, b.category, b.priority, b.payload, 0, b.max_attempts,
        b.enqueued_at, b.errors, b.cache_key, 'waiting', true, true
    from back as b;
    perform from queue.jobs as j
    where j.id in (select e.parent_id from queue.job_edges as e where e.child_id = any (job_ids))
    order by j.id for key share;
    update queue.jobs as j set workflow = true
    where j.id in (select e.parent_id from queue.job_edges as e where e.child_id = any (job_ids))
      and not j.workflow;
    update queue.jobs as j
    set waiting_on = c.n, status = case when c.n = 0 then 'pending' else 'waiting' end
    from (select e.child_id,
              count(*) filter (where exists (
                  select from queue.jobs as p where p.id = e.parent_id))::int as n
          from queue.job_edges as e where e.child_id = any (job_ids)
          group by e.child_id) as c
    where j.id = c.child_id;
end
$$;

-- _workflow_sweep: drop the kept ends (queue.workflow_results) no edge refers to any more.
-- A child's end drops them at once when it sees no other edge to the parent; two children
-- of one parent ending at the same time each still see the other's edge (neither has
-- committed), and a parent's end can keep its result for a child cancelled meanwhile: the
-- few rows such races leave are dropped here (queue.maintain, once a minute). Returns how
-- many went.
create or replace function queue._workflow_sweep() returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_count bigint;
begin
    delete from queue.workflow_results as r
    where not exists (select from queue.job_edges as e where e.parent_id = r.job_id);
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

revoke all on function queue._workflow_check(bigint[], text) from public;
revoke all on function queue._workflow_wait(bigint[], text, bigint[], text) from public;
revoke all on function queue._workflow_cancel(bigint, bigint) from public;
revoke all on function queue._workflow_forget(bigint[]) from public;
revoke all on function queue._workflow_ended(bigint[], bigint[], text, jsonb[], bigint[])
from public;
revoke all on function queue._workflow_count_down(bigint[], text[], int[]) from public;
revoke all on function queue._workflow_keep(bigint[], text, jsonb[]) from public;
revoke all on function queue._workflow_requeue(bigint) from public;
revoke all on function queue._workflow_revive(bigint[]) from public;
revoke all on function queue._workflow_sweep() from public;
