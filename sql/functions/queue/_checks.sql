-- Input checks shared by the queue functions (names, payloads, intervals, priorities,
-- kept results), the bounds of queue.config they check against, and the caller's role.
-- Private: granted to nobody; called only by andal's own SECURITY DEFINER functions.

-- _check_name: a name argument (queue, category, worker, key) is non-empty and not too long.
-- Raises 22004 when required and null, 22023 when empty or longer than max_length characters.
create or replace function queue._check_name(
    value text, argument text, required boolean default true, max_length int default 128
) returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if value is null then
        if required then
            raise exception '% must not be null', argument using errcode = '22004';
        end if;
        return;
    end if;
    if length(value) = 0 or length(value) > max_length then
        raise exception '% must be 1 to % characters long (got %)',
            argument, max_length, length(value)
            using errcode = '22023';
    end if;
end
$$;

-- _check_payload: a job payload is a non-null JSON object no larger than the queue's limit.
-- Raises 22004 (null), 22023 (not an object), 54000 (over payload_limit bytes of JSON text).
create or replace function queue._check_payload(payload jsonb, argument text, payload_limit int)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bytes bigint;
begin
    if payload is null then
        raise exception '% must not be null', argument using errcode = '22004';
    end if;
    if jsonb_typeof(payload) <> 'object' then
        raise exception '% must be a JSON object, not %', argument, jsonb_typeof(payload)
            using errcode = '22023';
    end if;
    -- The limit is on what a claimer receives: the JSON text, measured on every payload.
    -- The stored size says nothing about it (a jsonb number of a few bytes prints as up to
    -- 131,072 digits), so it is no shortcut; printing a small payload costs microseconds.
    v_bytes := octet_length(payload::text);
    if v_bytes > payload_limit then
        perform queue._payload_over(argument, v_bytes, payload_limit);
    end if;
end
$$;

-- _payload_over: the error of a payload of `bytes` bytes of JSON text, over `payload_limit`
-- (54000). Callers that measured the text already raise it with their figure: printing a
-- payload is the costly part of the check (a few bytes of jsonb can print as megabytes).
create or replace function queue._payload_over(argument text, bytes bigint, payload_limit int)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception '% is % bytes, over the queue''s limit of % bytes',
        argument, bytes, payload_limit
        using errcode = '54000',
        hint = 'Store large data elsewhere and pass a reference, '
        'or raise the limit with queue.configure_queue(payload_limit => ...).';
end
$$;

-- _limits: the bounds of queue.config (its column defaults when the row is missing). Out
-- parameters, not the table's row type: the function files are also applied to an older
-- schema before its migrations (an upgrade).
create or replace function queue._limits(
    out max_lease interval, out max_delay interval, out min_priority int,
    out max_priority int, out max_error_bytes int, out max_result_bytes int
)
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    select c.max_lease, c.max_delay, c.min_priority, c.max_priority, c.max_error_bytes,
        c.max_result_bytes
    into max_lease, max_delay, min_priority, max_priority, max_error_bytes, max_result_bytes
    from queue.config as c;
    if not found then
        max_lease := interval '1 day';
        max_delay := interval '1 year';
        min_priority := -1000000;
        max_priority := 1000000;
        max_error_bytes := 65536;
        max_result_bytes := 1048576;
    end if;
end
$$;

-- _check_interval: an interval argument is not null, its effect not negative (or positive
-- when strict), and at most the bound `bound` names ('lease': queue.config.max_lease,
-- 'delay': max_delay; null: 1000 years). The effect is what andal does with it: now() +
-- value, compared with now(), so '-100 years 36000 days' (equal to 0 as an interval, 1.4
-- years in the past as a time) counts as negative. Values too large for a timestamp are
-- refused before any addition. Raises 22004 (null and required) or 22023.
drop function if exists queue._check_interval(interval, text, boolean, boolean);
create or replace function queue._check_interval(
    value interval, argument text, strict_positive boolean default false,
    required boolean default true, bound text default null
) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max interval;
    v_epoch numeric;
    v_sign int;
    v_over boolean;
    v_at timestamptz;
begin
    if value is null then
        if required then
            raise exception '% must not be null', argument using errcode = '22004';
        end if;
        return;
    end if;
    -- The epoch is within a month per 30 days of the effect: far past 1000 years, the sign
    -- alone decides, and now() + value is never computed (it could overflow). The bound is
    -- read only for a positive value (a zero delay, the common default, reads nothing).
    v_epoch := extract(epoch from value);
    if abs(v_epoch) > 2 * 31557600000::numeric then
        v_sign := sign(v_epoch)::int;
    else
        v_at := now() + value;
        v_sign := case when v_at > now() then 1 when v_at < now() then -1 else 0 end;
    end if;
    if v_sign > 0 then
        v_max := case bound
            when 'lease' then (queue._limits()).max_lease
            when 'delay' then (queue._limits()).max_delay
            else interval '1000 years'
        end;
        v_over := v_at is null or v_at > now() + v_max;
    end if;
    if strict_positive and v_sign <= 0 then
        raise exception '% must be positive (got %)', argument, value using errcode = '22023';
    end if;
    if v_sign < 0 then
        raise exception '% must not be negative (got %)', argument, value
            using errcode = '22023';
    end if;
    if v_over then
        raise exception '% must be at most % (got %)', argument, v_max, value
            using errcode = '22023',
            hint = case bound
                when 'lease' then 'The bound is queue.config.max_lease.'
                when 'delay' then 'The bound is queue.config.max_delay.'
                else 'Intervals past 1000 years are refused.'
            end;
    end if;
end
$$;

-- _check_priority: a priority is not null and within queue.config's min_priority ..
-- max_priority (0 always is). Raises 22004 / 22023.
create or replace function queue._check_priority(priority int) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limits record;
begin
    if priority is null then
        raise exception 'priority must not be null' using errcode = '22004';
    end if;
    if priority = 0 then
        return;
    end if;
    v_limits := queue._limits();
    if priority not between v_limits.min_priority and v_limits.max_priority then
        raise exception 'priority must be between % and % (got %)',
            v_limits.min_priority, v_limits.max_priority, priority
            using errcode = '22023',
            hint = 'The bounds are queue.config.min_priority and max_priority.';
    end if;
end
$$;

-- _check_result: a result to keep is at most queue.config.max_result_bytes of JSON text;
-- returns it. Raises 54000.
create or replace function queue._check_result(result jsonb, argument text) returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit int;
begin
    if result is null then
        return null;
    end if;
    v_limit := (queue._limits()).max_result_bytes;
    if octet_length(result::text) > v_limit then
        raise exception '% is % bytes, over the limit of % bytes for kept results', argument,
            octet_length(result::text), v_limit
            using errcode = '54000',
            hint = 'Complete the job without a result (or fail it), or raise '
            'queue.config.max_result_bytes.';
    end if;
    return result;
end
$$;

-- _caller: the role a SECURITY DEFINER function acts for: the caller's SET ROLE, else the
-- session user (inside such a function current_user is the definer, never the caller).
create or replace function queue._caller() returns name
language sql stable
set search_path = pg_catalog, pg_temp
as $$ select coalesce(nullif(current_setting('role'), 'none'), session_user)::name $$;

revoke all on function queue._check_name(text, text, boolean, int) from public;
revoke all on function queue._check_payload(jsonb, text, int) from public;
revoke all on function queue._payload_over(text, bigint, int) from public;
revoke all on function queue._limits() from public;
revoke all on function queue._check_interval(interval, text, boolean, boolean, text) from public;
revoke all on function queue._check_priority(int) from public;
revoke all on function queue._check_result(jsonb, text) from public;
revoke all on function queue._caller() from public;
