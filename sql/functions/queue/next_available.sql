-- queue.next_available: when the next job of the given queues (null: every queue) becomes
-- claimable, so a client whose claim found nothing can sleep exactly until then. Null when
-- nothing is scheduled to become claimable.
--
-- What counts: pending jobs (delayed, backed off after a failure, or ready now) of queues that
-- are not paused, at their available_at; a job of a rate-limited category no earlier than the
-- category's window allows its next start; the next tick of the queues' schedules. A time at
-- or before now() means a job is claimable now (a claim can still miss it: another claimer
-- held its category's lock, or took it first).
-- What does not count: jobs of a category whose slots are all taken by unexpired leases
-- (their time depends on a running job finishing, not on a clock; a slot whose lease
-- expired does not count as taken) or that is paused
-- (max_running 0), and running jobs whose lease will expire (a take-back is a claim's or
-- queue.maintain()'s). A client that sleeps until this time still listens on andal_jobs and
-- keeps its poll interval as an upper bound.
-- Cost: reads the scope's pending jobs; called after an empty claim, they are the delayed and
-- gated ones. Works at every isolation level (answers from the snapshot).
-- Raises: 22023 null or bad queue names in queues.
create or replace function queue.next_available(queues text[] default null)
returns timestamptz
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_jobs timestamptz;
    v_ticks timestamptz;
    -- paused categories and those whose unexpired slots are all taken: the gate's own rule
    v_full text[] := queue._full_categories(queue._lease_clock());
begin
    if next_available.queues is not null then
        perform queue._check_names(next_available.queues, 'queues');
    end if;

    with cats as (
        select c.category,
            -- a full window (rate_starts starts in it, queue._rate_left): the next start is
            -- when the oldest of the newest rate_starts leaves it
            case when queue._rate_left(c.rate_log, c.rate_starts, c.rate_per,
                    queue._lease_clock()) <= 0 then (
                select t.at + c.rate_per from unnest(c.rate_log) as t (at)
                order by t.at desc offset c.rate_starts - 1 limit 1
            ) end as rate_free_at
        from queue.categories as c
    )
    select min(case when j.category is null then j.available_at
        else greatest(j.available_at, k.rate_free_at) end)
    into v_jobs
    from queue.jobs as j
    left join cats as k on k.category = j.category
    where j.status = 'pending'
        and (next_available.queues is null or j.queue = any (next_available.queues))
        and not exists (select from queue.queues as q where q.queue = j.queue and q.paused)
        and (j.category is null or not j.category = any (v_full));

    select min(s.next_at) into v_ticks
    from queue.schedules as s
    where s.task is null and s.next_at is not null
        and (next_available.queues is null or s.queue = any (next_available.queues))
        and not exists (select from queue.queues as q where q.queue = s.queue and q.paused);

    return least(v_jobs, v_ticks);
end
$$;

comment on function queue.next_available(text[]) is
'When the next job of the queues becomes claimable (null: nothing scheduled).';
revoke all on function queue.next_available(text[]) from public;
grant execute on function queue.next_available(text[])
to andal_worker, andal_admin, andal_monitor;
