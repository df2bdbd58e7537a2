-- andal's own housekeeping, run as schedules (private). queue.maintain() calls
-- queue._run_tasks(), which runs each due housekeeping schedule of queue.schedules once per
-- tick (the row lock and next_at make it one session's work per tick, as for job ticks):
--   andal.cache_refresh_due  cache.refresh_due(): enqueue refreshes of due views
--   andal.cache_prune        cache.prune(): old invalidation log rows, long-stale entries
--   andal.retention          results and dead letters past their queue's retention
--                            (results_retention, dead_retention), fired ticks past a day
--   andal.stats_rollup       per-session statistics rows of past minutes merged into one
--                            row per minute (the sums stay the same)

-- _retention: delete up to `lim` kept results and `lim` dead letters older than their
-- queue's retention (a queue without a row: 7 days and 30 days), and fired ticks older than
-- a day. Returns how many rows went.
create or replace function queue._retention(lim int default 10000) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_results bigint;
    v_dead bigint;
    v_ticks bigint;
begin
    with gone as (
        delete from queue.results as r
        where r.job_id in (
            select x.job_id from queue.results as x
            left join queue.queues as q on q.queue = x.queue
            where x.completed_at < now() - coalesce(q.results_retention, interval '7 days')
            order by x.completed_at
            limit lim
            for update of x skip locked
        )
        returning 1
    )
    select count(*) into v_results from gone;
    with gone as (
        delete from queue.dead_letters as d
        where d.job_id in (
            select x.job_id from queue.dead_letters as x
            left join queue.queues as q on q.queue = x.queue
            where x.died_at < now() - coalesce(q.dead_retention, interval '30 days')
            order by x.died_at
            limit lim
            for update of x skip locked
        )
        returning 1
    )
    select count(*) into v_dead from gone;
    -- a fired tick is kept a day: next_at has long moved past it
    delete from queue.schedule_ticks as t where t.fired_at < now() - interval '1 day';
    get diagnostics v_ticks = row_count;
    return v_results + v_dead + v_ticks;
end
$$;

-- _stats_rollup: merge the per-session rows of queue.stat_minutes and queue.lock_stats
-- older than five minutes into one row per minute (backend 0): what queue.stats() sums is
-- unchanged, the tables hold a row per minute instead of one per session and minute.
create or replace function queue._stats_rollup() returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_before timestamptz := date_trunc('minute', now()) - interval '5 minutes';
    v_rows bigint;
    v_locks bigint;
begin
    with gone as (
        delete from queue.stat_minutes as s
        where s.minute < v_before and s.backend <> 0
        returning s.*
    ),
    merged as (
        select g.minute, g.queue, g.category, sum(g.completed)::bigint as completed,
            sum(g.retried)::bigint as retried, sum(g.dead)::bigint as dead,
            sum(g.run_count)::bigint as run_count, sum(g.run_ms) as run_ms,
            array(select sum(u.h)::bigint from gone as h2
                  cross join unnest(h2.run_hist) with ordinality as u (h, i)
                  where h2.minute = g.minute and h2.queue = g.queue
                    and h2.category = g.category
                  group by u.i order by u.i) as run_hist,
            array(select sum(u.h)::bigint from gone as h2
                  cross join unnest(h2.wait_hist) with ordinality as u (h, i)
                  where h2.minute = g.minute and h2.queue = g.queue
                    and h2.category = g.category
                  group by u.i order by u.i) as wait_hist
        from gone as g
        group by g.minute, g.queue, g.category
    )
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, retried, dead, run_count, run_ms,
        run_hist, wait_hist
    )
    select m.minute, 0, m.queue, m.category, m.completed, m.retried, m.dead, m.run_count,
        m.run_ms, m.run_hist, m.wait_hist
    from merged as m
    on conflict (minute, backend, queue, category) do update
    set completed = s.completed + excluded.completed,
        retried = s.retried + excluded.retried,
        dead = s.dead + excluded.dead,
        run_count = s.run_count + excluded.run_count,
        run_ms = s.run_ms + excluded.run_ms,
        run_hist = array(select u.a + u.b from unnest(s.run_hist, excluded.run_hist) as u (a, b)),
        wait_hist = array(select u.a + u.b from unnest(s.wait_hist, excluded.wait_hist) as u (a, b));
    get diagnostics v_rows = row_count;
    with gone as (
        delete from queue.lock_stats as s
        where s.minute < v_before and s.backend <> 0
        returning s.*
    )
    insert into queue.lock_stats as s (
        minute, backend, category_id, attempts, failures, rate_refusals
    )
    select g.minute, 0, g.category_id, sum(g.attempts), sum(g.failures), sum(g.rate_refusals)
    from gone as g
    group by g.minute, g.category_id
    on conflict (minute, backend, category_id) do update
    set attempts = s.attempts + excluded.attempts, failures = s.failures + excluded.failures,
        rate_refusals = s.rate_refusals + excluded.rate_refusals;
    get diagnostics v_locks = row_count;
    return v_rows + v_locks;
end
$$;

-- _run_task: run one housekeeping task by name.
create or replace function queue._run_task(task text) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    case task
        when 'cache_refresh_due' then perform cache.refresh_due();
        when 'cache_prune' then perform cache.prune();
        when 'retention' then perform queue._retention();
        when 'stats_rollup' then perform queue._stats_rollup();
        else raise exception 'unknown housekeeping task %', task using errcode = '42704';
    end case;
end
$$;

-- _run_tasks: run the due housekeeping schedules (rows another session holds are skipped:
-- it is running them); each in its own subtransaction, so a failing task records its error
-- in last_error and the others still run. Returns how many ran.
create or replace function queue._run_tasks() returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_s record;
    v_ran int := 0;
    v_error text;
begin
    for v_s in
        select s.name, s.task, s.cron, s.every, s.timezone, s.anchor
        from queue.schedules as s
        where s.task is not null and s.next_at <= now()
        order by s.next_at
        for update skip locked
    loop
        v_error := null;
        begin
            perform queue._run_task(v_s.task);
        exception when others then
            v_error := sqlerrm;
        end;
        update queue.schedules as s
        set next_at = queue._next_tick(v_s.cron, v_s.every, v_s.timezone, v_s.anchor, now()),
            last_tick = coalesce(queue._latest_tick(v_s.cron, v_s.every, v_s.timezone,
                v_s.anchor, s.next_at, now()), s.next_at),
            last_fired_at = now(), last_error = v_error
        where s.name = v_s.name;
        v_ran := v_ran + 1;
    end loop;
    return v_ran;
end
$$;

revoke all on function queue._retention(int) from public;
revoke all on function queue._stats_rollup() from public;
revoke all on function queue._run_task(text) from public;
revoke all on function queue._run_tasks() from public;
