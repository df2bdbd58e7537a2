-- queue.schedule: create or update the named schedule; returns its next fire time.
--
-- A schedule enqueues one job per tick into `queue`: ticks by a 5-field cron expression read
-- in `timezone` (`cron`), or every fixed `every` (whole seconds, from the time the schedule
-- was made; no calendar). Give exactly one of cron and every. Each tick's job carries
-- `payload` with two keys added: "_schedule" (the name) and "_tick" (the tick time).
-- Guarantees: exactly one job per tick, whoever fires it (any claim of the queue, any
-- queue.maintain()): a tick is recorded in queue.schedule_ticks under a unique (schedule,
-- tick) key in the same transaction as its job. When ticks were missed (nothing fired for a
-- while), `missed` decides: 'latest' (the default) fires only the latest missed tick, 'all'
-- fires every missed tick, up to the latest `catch_up`. Updating a schedule first fires its
-- ticks that are due but not fired yet, by its old definition (queue._fire_or_record), and
-- keeps the ticks already fired (its next tick is after the last one and after now): an
-- update neither drops a due tick nor re-fires one. Names starting with
-- "andal." are andal's own housekeeping: only their timing (cron, every, timezone, missed,
-- enabled) may be changed. enabled => false keeps the schedule but fires nothing.
-- Raises: 22004 null name, or null queue for a new schedule; 22023 neither or both of cron
-- and every, a bad cron expression (the field and the item at fault), an expression that
-- never fires, every not whole seconds or with months, or over queue.config.max_delay, an
-- unknown time zone, a bad name, missed not latest/all, catch_up outside 1..10000, a bad
-- priority or max_attempts, a new name starting with "andal.", a payload or category given
-- to a housekeeping schedule; 54000 payload over the queue's limit.
create or replace function queue.schedule(
    name text,
    queue text default null,
    cron text default null,
    every interval default null,
    payload jsonb default '{}',
    timezone text default 'UTC',
    category text default null,
    priority int default 0,
    max_attempts int default null,
    missed text default 'latest',
    catch_up int default 100,
    enabled boolean default true
) returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_old record;
    v_next timestamptz;
    v_anchor timestamptz := date_trunc('second', now());
    v_secs numeric;
begin
    perform queue._check_name(schedule.name, 'name');
    select s.* into v_old from queue.schedules as s where s.name = schedule.name for update;
    if v_old.task is null and v_old.next_at <= now() then
        -- Ticks due but not fired yet (no claim or maintain since) are fired first, as the
        -- schedule defined them: an update neither drops a due tick nor re-fires one.
        perform queue._fire_or_record(schedule.name);
        select s.* into v_old from queue.schedules as s where s.name = schedule.name;
    end if;
    if v_old.name is null and schedule.name like 'andal.%' then
        raise exception 'schedule names starting with "andal." are andal''s own (got %)',
            schedule.name
            using errcode = '22023', hint = 'Choose another name.';
    end if;
    if v_old.task is not null then
        if schedule.queue is not null or schedule.payload <> '{}' or schedule.category is not null
            or schedule.priority <> 0 or schedule.max_attempts is not null then
            raise exception 'schedule % is andal''s own housekeeping: only its timing can change',
                schedule.name
                using errcode = '22023',
                hint = 'Give only cron or every, timezone, missed and enabled.';
        end if;
    else
        perform queue._check_name(schedule.queue, 'queue');
        perform queue._check_name(schedule.category, 'category', false);
        perform queue._check_priority(schedule.priority);
        if schedule.max_attempts < 1 then
            raise exception 'max_attempts must be at least 1 (got %)', schedule.max_attempts
                using errcode = '22023';
        end if;
        if schedule.payload is null then
            raise exception 'payload must not be null' using errcode = '22004';
        end if;
        perform queue._check_payload(schedule.payload
            || jsonb_build_object('_schedule', schedule.name, '_tick', now()), 'payload',
            coalesce((select q.payload_limit from queue.queues as q
                      where q.queue = schedule.queue), 1048576));
    end if;
    if (schedule.cron is null) = (schedule.every is null) then
        raise exception 'give exactly one of cron and every' using errcode = '22023',
            hint = 'cron => ''*/5 * * * *'' or every => ''30 seconds''.';
    end if;
    if schedule.timezone is null then
        raise exception 'timezone must not be null' using errcode = '22004';
    end if;
    begin
        perform now() at time zone schedule.timezone;
    exception when invalid_parameter_value then
        raise exception 'time zone "%" is not known', schedule.timezone
            using errcode = '22023', hint = 'Use a name of pg_timezone_names, such as Europe/Berlin.';
    end;
    if schedule.missed is null or schedule.missed not in ('latest', 'all') then
        raise exception 'missed must be latest or all (got %)', schedule.missed
            using errcode = '22023';
    end if;
    if schedule.catch_up is null or schedule.catch_up not between 1 and 10000 then
        raise exception 'catch_up must be between 1 and 10000 (got %)', schedule.catch_up
            using errcode = '22023';
    end if;
    if schedule.enabled is null then
        raise exception 'enabled must not be null' using errcode = '22004';
    end if;
    if schedule.every is not null then
        perform queue._check_interval(schedule.every, 'every', true, true, 'delay');
        v_secs := extract(epoch from schedule.every);
        if extract(month from schedule.every) <> 0 or extract(year from schedule.every) <> 0
            or v_secs < 1 or v_secs <> trunc(v_secs) then
            raise exception 'every must be whole seconds, at least 1, without months (got %)',
                schedule.every
                using errcode = '22023', hint = 'For calendar times use cron.';
        end if;
    end if;
    if v_old.name is not null and v_old.every is not distinct from schedule.every
        and v_old.cron is null then
        v_anchor := v_old.anchor;  -- a period kept keeps its ticks' phase
    end if;
    -- a tick already fired stays fired: the next one is after it
    v_next := queue._next_tick(schedule.cron, schedule.every, schedule.timezone, v_anchor,
        greatest(now(), v_old.last_tick));
    if v_next is null then
        raise exception 'cron expression "%" never fires', schedule.cron using errcode = '22023';
    end if;
    if v_old.task is not null then
        update queue.schedules as s
        set cron = schedule.cron, every = schedule.every, timezone = schedule.timezone,
            missed = schedule.missed, catch_up = schedule.catch_up,
            enabled = schedule.enabled, anchor = v_anchor,
            next_at = case when schedule.enabled then v_next end, updated_at = now()
        where s.name = schedule.name;
    else
        insert into queue.schedules as s (
            name, queue, cron, every, timezone, payload, category, priority, max_attempts,
            missed, catch_up, enabled, anchor, next_at
        ) values (
            schedule.name, schedule.queue, schedule.cron, schedule.every, schedule.timezone,
            schedule.payload, schedule.category, schedule.priority, schedule.max_attempts,
            schedule.missed, schedule.catch_up, schedule.enabled, v_anchor,
            case when schedule.enabled then v_next end
        )
        on conflict (name) do update set
            queue = excluded.queue, cron = excluded.cron, every = excluded.every,
            timezone = excluded.timezone, payload = excluded.payload,
            category = excluded.category, priority = excluded.priority,
            max_attempts = excluded.max_attempts, missed = excluded.missed,
            catch_up = excluded.catch_up, enabled = excluded.enabled,
            anchor = excluded.anchor, next_at = excluded.next_at, last_error = null,
            updated_at = now();
    end if;
    return case when schedule.enabled then v_next end;
end
$$;

comment on function queue.schedule(
    text, text, text, interval, jsonb, text, text, int, int, text, int, boolean
) is 'Create or update a named schedule (cron or every); one job per tick, exactly once.';
revoke all on function queue.schedule(
    text, text, text, interval, jsonb, text, text, int, int, text, int, boolean
) from public;
grant execute on function queue.schedule(
    text, text, text, interval, jsonb, text, text, int, int, text, int, boolean
) to andal_admin;
