-- Firing of schedule ticks (private). queue._fire_due is called by queue.claim when a
-- schedule of the claimed queues is due, and by queue.maintain(); queue._run_tasks by
-- queue.maintain() for andal's own housekeeping.

-- _fire: fire the due ticks of one schedule whose row the caller holds locked: record each
-- tick in queue.schedule_ticks (its primary key (schedule, tick) makes a second firing a
-- no-op) and enqueue its job, then move next_at past now. Returns the ticks fired.
-- max_ticks (a claim's budget; null: no bound) bounds the work: at most max_ticks ticks are
-- fired, oldest first, and next_at stays on the first tick left, still due, for the next
-- claim or queue.maintain(); a cron schedule catching up with missed => 'all' (a walk of
-- the expression over the missed time) is left to queue.maintain() whole. No tick is lost.
drop function if exists queue._fire(text);
drop function if exists queue._fire_or_record(text);
drop function if exists queue._fire_due(text[], int);
create or replace function queue._fire(schedule_name text, max_ticks int) returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_s record;
    v_ticks timestamptz[] := '{}'::timestamptz[];
    v_tick timestamptz;
    v_step numeric;
    v_n numeric;
    v_job bigint;
    v_fired int := 0;
    v_walk int := 0;
    v_rest timestamptz;  -- the first due tick left for later (max_ticks)
begin
    select s.* into v_s from queue.schedules as s where s.name = schedule_name;
    if v_s.next_at is null or v_s.next_at > now() then
        return 0;
    end if;
    if queue._next_tick(v_s.cron, v_s.every, v_s.timezone, v_s.anchor, v_s.next_at) > now() then
        v_ticks := array[v_s.next_at];  -- the usual case: one tick due
    elsif v_s.missed = 'latest' then
        v_ticks := array[queue._latest_tick(v_s.cron, v_s.every, v_s.timezone, v_s.anchor,
            v_s.next_at, now())];
    elsif v_s.every is not null then
        v_step := extract(epoch from v_s.every);
        v_n := floor(extract(epoch from now() - v_s.next_at) / v_step);  -- ticks after next_at
        v_ticks := array(
            select v_s.next_at + make_interval(secs => (k * v_step)::double precision)
            from generate_series(greatest(v_n - v_s.catch_up + 1, 0), v_n) as k
            order by k);
    elsif max_ticks is not null then
        return 0;  -- a cron catch-up: queue.maintain() walks it
    else
        v_tick := v_s.next_at;
        while v_tick is not null and v_tick <= now() loop
            v_ticks := (v_ticks || v_tick)[greatest(cardinality(v_ticks) + 2 - v_s.catch_up, 1):];
            v_walk := v_walk + 1;
            if v_walk = 10000 then
                -- a long outage of a dense expression: only the latest ticks matter
                v_tick := greatest(v_tick, now() - interval '1 day');
            end if;
            v_tick := queue._cron_next(v_s.cron, v_tick, v_s.timezone);
        end loop;
    end if;
    v_ticks := array_remove(v_ticks, null);
    if cardinality(v_ticks) > max_ticks then
        v_rest := v_ticks[max_ticks + 1];
        v_ticks := v_ticks[1:max_ticks];
    end if;
    foreach v_tick in array v_ticks loop
        insert into queue.schedule_ticks as t (schedule, tick)
        values (v_s.name, v_tick)
        on conflict (schedule, tick) do nothing;
        if found then
            v_job := queue.enqueue(
                payload => v_s.payload
                    || jsonb_build_object('_schedule', v_s.name, '_tick', v_tick),
                queue => v_s.queue, category => v_s.category, priority => v_s.priority,
                max_attempts => v_s.max_attempts);
            update queue.schedule_ticks as t set job_id = v_job
            where t.schedule = v_s.name and t.tick = v_tick;
            v_fired := v_fired + 1;
        end if;
    end loop;
    update queue.schedules as s
    set next_at = coalesce(v_rest, queue._next_tick(v_s.cron, v_s.every, v_s.timezone,
            v_s.anchor, greatest(now(), v_tick))),
        last_tick = coalesce(v_tick, s.last_tick),
        last_fired_at = now(),
        last_job_id = coalesce(v_job, s.last_job_id),
        last_error = null
    where s.name = v_s.name;
    return v_fired;
end
$$;

-- _fire_due: fire the due job schedules of `queues` (null: of every queue), at most `lim`
-- of them, skipping those another session is firing (their rows are locked). A schedule
-- whose firing fails (its queue's payload limit shrank, say) records the error in
-- last_error and moves on to its next tick, so a claim never fails because of it. At most
-- max_ticks ticks in all (a claim's budget, see queue._fire; null: no bound). Returns the
-- ticks fired.
create or replace function queue._fire_due(
    queues text[] default null, lim int default 100, max_ticks int default null
)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_name text;
    v_fired int := 0;
begin
    for v_name in
        select s.name from queue.schedules as s
        where s.task is null and s.next_at <= now()
          and (_fire_due.queues is null or s.queue = any (_fire_due.queues))
        order by s.next_at
        limit lim
        for update skip locked
    loop
        v_fired := v_fired + queue._fire_or_record(v_name, max_ticks - v_fired);
        exit when v_fired >= max_ticks;
    end loop;
    return v_fired;
end
$$;

-- _fire_or_record: queue._fire of one schedule whose row the caller holds locked; a firing
-- that fails records the error in last_error and moves the schedule to its next tick
-- instead of raising. Returns the ticks fired.
create or replace function queue._fire_or_record(schedule_name text, max_ticks int default null)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    return queue._fire(schedule_name, max_ticks);
exception when others then
    update queue.schedules as s
    set last_error = sqlerrm,
        next_at = queue._next_tick(s.cron, s.every, s.timezone, s.anchor, now())
    where s.name = schedule_name;
    return 0;
end
$$;

revoke all on function queue._fire(text, int) from public;
revoke all on function queue._fire_due(text[], int, int) from public;
revoke all on function queue._fire_or_record(text, int) from public;
