-- Cron expressions and fire times, in SQL (private: used by queue.schedule and the firing of
-- ticks). Standard 5 fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or
-- jan-dec), day of week (0-7 or sun-sat; 0 and 7 are Sunday). Each field is * or a list of
-- items n, a-b, */s, a-b/s, n/s (n to the field's end). When both day of month and day of
-- week are restricted (neither starts with *), a day matches when either does; otherwise the
-- restricted one alone decides. @yearly (@annually), @monthly, @weekly, @daily (@midnight)
-- and @hourly stand for their usual expressions.

-- _cron_field: the sorted values one field allows. Raises 22023 naming the field and the
-- bad item.
create or replace function queue._cron_field(
    part text, field text, lo int, hi int, names text[] default null
) returns int []
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_item text;
    v_range text;
    v_step int;
    v_from int;
    v_to int;
    v_bounds text[];
    v_values int[] := '{}'::int[];
begin
    if part is null or part = '' then
        raise exception 'cron % field is empty', field using errcode = '22023';
    end if;
    foreach v_item in array string_to_array(lower(part), ',') loop
        if v_item !~ '^(\*|[a-z0-9]+(-[a-z0-9]+)?)(/[0-9]+)?$' then
            raise exception 'cron % field: "%" is not n, a-b, * or one of them with /step',
                field, v_item
                using errcode = '22023',
                hint = 'Example: */15 9-17 * jan-jun mon-fri';
        end if;
        v_range := split_part(v_item, '/', 1);
        v_step := 1;
        if position('/' in v_item) > 0 then
            if length(split_part(v_item, '/', 2)) > 4 then
                raise exception 'cron % field: step % is too large', field,
                    split_part(v_item, '/', 2)
                    using errcode = '22023';
            end if;
            v_step := split_part(v_item, '/', 2)::int;
            if v_step < 1 or v_step > hi - lo + 1 then
                raise exception 'cron % field: step % must be between 1 and %', field, v_step,
                    hi - lo + 1
                    using errcode = '22023';
            end if;
        end if;
        if v_range = '*' then
            v_from := lo;
            v_to := hi;
        else
            v_bounds := string_to_array(v_range, '-');
            for v_i in 1 .. cardinality(v_bounds) loop
                if v_bounds[v_i] ~ '^[0-9]{1,4}$' then
                    continue;
                end if;
                if names is null or not v_bounds[v_i] = any (names) then
                    raise exception 'cron % field: "%" is not a number%', field, v_bounds[v_i],
                        case when names is null then '' else
                            ' or one of ' || array_to_string(names, ', ') end
                        using errcode = '22023';
                end if;
                v_bounds[v_i] := (array_position(names, v_bounds[v_i]) - 1 + lo)::text;
            end loop;
            v_from := v_bounds[1]::int;
            v_to := case
                when cardinality(v_bounds) = 2 then v_bounds[2]::int
                when v_step > 1 or position('/' in v_item) > 0 then hi
                else v_from
            end;
            if v_from < lo or v_from > hi or v_to < lo or v_to > hi then
                raise exception 'cron % field: "%" is outside %-%', field, v_range, lo, hi
                    using errcode = '22023';
            end if;
            if v_to < v_from then
                raise exception 'cron % field: range "%" runs backwards', field, v_range
                    using errcode = '22023';
            end if;
        end if;
        v_values := v_values || array(select g from generate_series(v_from, v_to, v_step) as g);
    end loop;
    return array(select distinct u from unnest(v_values) as u order by u);
end
$$;

-- _cron_parse: the values each field of a cron expression allows (day of week 0-6, Sunday
-- 0), and whether day of month and day of week are restricted. Raises 22004 (null) or 22023
-- (bad expression, with the field and the item at fault).
create or replace function queue._cron_parse(
    expr text,
    out minutes int [], out hours int [], out days int [], out months int [],
    out weekdays int [], out days_restricted boolean, out weekdays_restricted boolean
)
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_text text;
    v_fields text[];
begin
    if expr is null then
        raise exception 'cron must not be null' using errcode = '22004';
    end if;
    v_text := btrim(lower(expr));
    v_text := case v_text
        when '@yearly' then '0 0 1 1 *'
        when '@annually' then '0 0 1 1 *'
        when '@monthly' then '0 0 1 * *'
        when '@weekly' then '0 0 * * 0'
        when '@daily' then '0 0 * * *'
        when '@midnight' then '0 0 * * *'
        when '@hourly' then '0 * * * *'
        else v_text
    end;
    if length(v_text) > 256 then
        raise exception 'cron expression is longer than 256 characters' using errcode = '22023';
    end if;
    v_fields := regexp_split_to_array(v_text, '\s+');
    if v_text = '' or cardinality(v_fields) <> 5 then
        raise exception 'cron expression "%" must have 5 fields (minute hour day month weekday)',
            expr
            using errcode = '22023',
            hint = 'Example: */5 * * * * (every five minutes); or use every => interval.';
    end if;
    minutes := queue._cron_field(v_fields[1], 'minute', 0, 59);
    hours := queue._cron_field(v_fields[2], 'hour', 0, 23);
    days := queue._cron_field(v_fields[3], 'day-of-month', 1, 31);
    months := queue._cron_field(v_fields[4], 'month', 1, 12,
        array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov',
            'dec']);
    weekdays := queue._cron_field(v_fields[5], 'day-of-week', 0, 7,
        array['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']);
    weekdays := array(select distinct w % 7 from unnest(weekdays) as w order by 1);
    days_restricted := left(v_fields[3], 1) <> '*';
    weekdays_restricted := left(v_fields[5], 1) <> '*';
    -- a day that no month has (30 February alone) never fires
    if not exists (
        select from unnest(months) as m, unnest(days) as d
        where d <= case when m = 2 then 29 when m in (4, 6, 9, 11) then 30 else 31 end
    ) and not (days_restricted and weekdays_restricted) then
        raise exception 'cron expression "%" never fires (no such day in those months)', expr
            using errcode = '22023';
    end if;
end
$$;

-- _cron_next_local: the first wall-clock minute after `after` that the parsed fields match,
-- or null when none is before `until`.
create or replace function queue._cron_next_local(
    minutes int [], hours int [], days int [], months int [], weekdays int [],
    days_restricted boolean, weekdays_restricted boolean,
    after timestamp, until timestamp
) returns timestamp
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_day date := after::date;
    v_start time := (date_trunc('minute', after) + interval '1 minute')::time;
    v_first boolean := true;
    v_dom_ok boolean;
    v_dow_ok boolean;
    v_at timestamp;
begin
    if after::time >= time '23:59' then
        v_first := false;
        v_day := v_day + 1;
    end if;
    while v_day <= until::date loop
        if not extract(month from v_day)::int = any (months) then
            -- to the first of the next month
            v_day := (date_trunc('month', v_day) + interval '1 month')::date;
            v_first := false;
            continue;
        end if;
        v_dom_ok := extract(day from v_day)::int = any (days);
        v_dow_ok := extract(dow from v_day)::int = any (weekdays);
        if (case
            when days_restricted and weekdays_restricted then v_dom_ok or v_dow_ok
            when days_restricted then v_dom_ok
            when weekdays_restricted then v_dow_ok
            else true
        end) then
            select v_day + make_time(h, m, 0) into v_at
            from unnest(hours) as h, unnest(minutes) as m
            where not v_first or make_time(h, m, 0) >= v_start
            order by h, m
            limit 1;
            if v_at is not null then
                return case when v_at <= until then v_at end;
            end if;
        end if;
        v_day := v_day + 1;
        v_first := false;
    end loop;
    return null;
end
$$;

-- _cron_walk_minutes: the first real minute after `after` that fires, looking at the
-- minutes of `span` from each of `starts` (in order): a minute fires when its wall time in
-- `tz` matches and is that wall time's first occurrence (or the hour field is *), or when
-- it is the instant PostgreSQL gives a matching wall time that the clock skipped. Null
-- when none in those spans does.
create or replace function queue._cron_walk_minutes(
    minutes int [], hours int [], days int [], months int [], weekdays int [],
    days_restricted boolean, weekdays_restricted boolean, hour_any boolean, tz text,
    after timestamptz, starts timestamptz [], span interval
) returns timestamptz
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_start timestamptz;
    v_i timestamptz;
    v_end timestamptz;
    v_wall timestamp;
    v_skipped timestamp;
begin
    foreach v_start in array starts loop
        v_i := date_trunc('minute', greatest(v_start, after)) + interval '1 minute';
        if v_i <= after then
            v_i := v_i + interval '1 minute';
        end if;
        v_end := greatest(v_start, after) + span;
        while v_i <= v_end loop
            v_wall := v_i at time zone tz;
            -- its own wall time, at its first occurrence unless every hour fires
            if queue._cron_matches(minutes, hours, days, months, weekdays, days_restricted,
                    weekdays_restricted, v_wall)
                and (hour_any or not exists (
                    select from unnest(array[30, 60, 120]) as o
                    where ((v_i - make_interval(mins => o)) at time zone tz) = v_wall)) then
                return v_i;
            end if;
            -- a wall time the clock skipped, which PostgreSQL places at this instant
            foreach v_skipped in array array[v_wall - interval '30 minutes',
                v_wall - interval '60 minutes', v_wall - interval '120 minutes'] loop
                if (v_skipped at time zone tz) = v_i
                    and ((v_skipped at time zone tz) at time zone tz) <> v_skipped
                    and queue._cron_matches(minutes, hours, days, months, weekdays,
                        days_restricted, weekdays_restricted, v_skipped) then
                    return v_i;
                end if;
            end loop;
            v_i := v_i + interval '1 minute';
        end loop;
    end loop;
    return null;
end
$$;

-- _cron_matches: whether a wall time matches the parsed fields.
create or replace function queue._cron_matches(
    minutes int [], hours int [], days int [], months int [], weekdays int [],
    days_restricted boolean, weekdays_restricted boolean, wall timestamp
) returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_dom boolean;
    v_dow boolean;
begin
    if not (extract(minute from wall)::int = any (minutes)
            and extract(hour from wall)::int = any (hours)
            and extract(month from wall)::int = any (months)) then
        return false;
    end if;
    v_dom := extract(day from wall)::int = any (days);
    v_dow := extract(dow from wall)::int = any (weekdays);
    return case
        when days_restricted and weekdays_restricted then v_dom or v_dow
        when days_restricted then v_dom
        when weekdays_restricted then v_dow
        else true
    end;
end
$$;

-- _cron_next: the first fire time after `after` of a cron expression read in time zone `tz`.
-- A wall-clock time the clock skips (the spring-forward hour) fires at the same time by the
-- new clock (02:30 becomes 03:30); a wall-clock time that occurs twice (the fall-back hour)
-- fires once, at its first occurrence, unless the hour field is *, when every real minute
-- of both passes that matches fires. Null when the expression never fires within 8 years.
create or replace function queue._cron_next(expr text, after timestamptz, tz text)
returns timestamptz
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_p record;
    v_wall timestamp;
    v_until timestamp;
    v_local timestamp;
    v_best timestamptz;
    v_best_wall timestamp;
    v_at timestamptz;
    v_hour_any boolean;
begin
    v_p := queue._cron_parse(expr);
    v_hour_any := cardinality(v_p.hours) = 24;
    -- Usually no clock change is near: the first wall time after `after`'s is the answer
    -- when the zone's offset is the same two hours either side of `after` and of it.
    v_local := queue._cron_next_local(v_p.minutes, v_p.hours, v_p.days, v_p.months,
        v_p.weekdays, v_p.days_restricted, v_p.weekdays_restricted, after at time zone tz,
        (after at time zone tz) + interval '8 years');
    if v_local is null then
        return null;
    end if;
    v_at := v_local at time zone tz;
    if (select count(distinct (x at time zone tz) - (x at time zone 'UTC')) = 1
        from unnest(array[after - interval '2 hours', after, after + interval '2 hours',
            v_at - interval '2 hours', v_at, v_at + interval '2 hours']) as x) then
        return v_at;
    end if;
    -- A clock change is near: walk the real minutes near `after` and near the first
    -- candidate, in time order (the first that fires is the answer).
    v_at := queue._cron_walk_minutes(v_p.minutes, v_p.hours, v_p.days, v_p.months,
        v_p.weekdays, v_p.days_restricted, v_p.weekdays_restricted, v_hour_any, tz, after,
        array[after, v_at - interval '3 hours'], interval '4 hours');
    if v_at is not null then
        return v_at;
    end if;
    -- Otherwise by wall times: from two hours before the wall time of `after` (a fall-back
    -- hour repeats wall times already passed), the first candidate later than `after`;
    -- then two hours more (no clock change is longer) for an earlier real time among later
    -- wall times.
    v_wall := (after at time zone tz) - interval '2 hours';
    v_until := (after at time zone tz) + interval '8 years';
    loop
        v_local := queue._cron_next_local(v_p.minutes, v_p.hours, v_p.days, v_p.months,
            v_p.weekdays, v_p.days_restricted, v_p.weekdays_restricted, v_wall,
            coalesce(v_best_wall + interval '2 hours', v_until));
        exit when v_local is null;
        -- every real instant whose wall time is v_local (two in a fall-back hour), else the
        -- instant PostgreSQL gives a skipped wall time
        for v_at in
            select i from (
                select (v_local at time zone tz) + make_interval(mins => o) as i
                from unnest(array[-120, -60, -30, 0, 30, 60, 120]) as o
            ) as c
            where (c.i at time zone tz) = v_local
            order by i
        loop
            if v_at > after and (v_best is null or v_at < v_best) then
                v_best := v_at;
                v_best_wall := v_local;
            end if;
            exit when not v_hour_any;
        end loop;
        if not found then
            v_at := v_local at time zone tz;
            if v_at > after and (v_best is null or v_at < v_best) then
                v_best := v_at;
                v_best_wall := v_local;
            end if;
        end if;
        v_wall := v_local;
    end loop;
    return v_best;
end
$$;

-- _next_tick: the first tick of a schedule after `after`: by its cron expression in its
-- time zone, or every `every` from its anchor (whole seconds, no calendar).
create or replace function queue._next_tick(
    cron text, every interval, tz text, anchor timestamptz, after timestamptz
) returns timestamptz
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_step numeric;
    v_n numeric;
begin
    if cron is not null then
        return queue._cron_next(cron, after, tz);
    end if;
    v_step := extract(epoch from every);
    v_n := floor(extract(epoch from after - anchor) / v_step) + 1;
    return anchor + make_interval(secs => (greatest(v_n, 0) * v_step)::double precision);
end
$$;

-- _latest_tick: the last tick of a schedule at or before `at` and not before `since`, or
-- null when there is none.
create or replace function queue._latest_tick(
    cron text, every interval, tz text, anchor timestamptz, since timestamptz, at timestamptz
) returns timestamptz
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_step numeric;
    v_tick timestamptz;
    v_next timestamptz;
    v_from timestamptz;
begin
    if since > at then
        return null;
    end if;
    if cron is null then
        v_step := extract(epoch from every);
        v_tick := anchor + make_interval(secs =>
            (floor(extract(epoch from at - anchor) / v_step) * v_step)::double precision);
        return case when v_tick >= since then v_tick end;
    end if;
    -- walk forward from a window before `at` that grows until it holds a tick
    foreach v_from in array array[at - interval '1 hour', at - interval '1 day',
        at - interval '32 days', at - interval '367 days', since] loop
        v_from := greatest(v_from, since);
        v_next := queue._cron_next(cron, v_from - interval '1 microsecond', tz);
        v_tick := null;
        while v_next is not null and v_next <= at loop
            v_tick := v_next;
            v_next := queue._cron_next(cron, v_next, tz);
        end loop;
        if v_tick is not null then
            return v_tick;
        end if;
        exit when v_from = since;
    end loop;
    return null;
end
$$;

revoke all on function queue._cron_field(text, text, int, int, text[]) from public;
revoke all on function queue._cron_parse(text) from public;
revoke all on function queue._cron_next_local(
    int[], int[], int[], int[], int[], boolean, boolean, timestamp, timestamp
) from public;
revoke all on function queue._cron_next(text, timestamptz, text) from public;
revoke all on function queue._cron_walk_minutes(
    int[], int[], int[], int[], int[], boolean, boolean, boolean, text, timestamptz,
    timestamptz[], interval
) from public;
revoke all on function queue._cron_matches(
    int[], int[], int[], int[], int[], boolean, boolean, timestamp
) from public;
revoke all on function queue._next_tick(text, interval, text, timestamptz, timestamptz)
from public;
revoke all on function queue._latest_tick(
    text, interval, text, timestamptz, timestamptz, timestamptz
) from public;
