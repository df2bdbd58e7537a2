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

-- _check_names: every element of a names array (queue names) is a name: not null, 1 to 128
-- characters; checked in one plain loop, as queue._claim does inline on the hot path (its
-- copy: `length(v_name) not between 1 and 128`, a plain expression, no call). Raises 22023
-- (`argument must hold queue names (1 to 128 characters, no nulls)`).
create or replace function queue._check_names(names text [], argument text) returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_name text;
begin
    foreach v_name in array coalesce(names, '{}') loop
        if v_name is null or length(v_name) not between 1 and 128 then
            raise exception '% must hold queue names (1 to 128 characters, no nulls)', argument
                using errcode = '22023';
        end if;
    end loop;
end
$$;

-- _json_number_chars: the length of a JSON number's text as jsonb prints it (every digit,
-- never an exponent), computed without printing it: a number of a few stored bytes prints as
-- up to 147,455 characters (1e131071, 0e-16383).
create or replace function queue._json_number_chars(value numeric) returns bigint
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_abs numeric := abs(value);
    v_digits bigint;
begin
    if v_abs < 1e15 then
        v_digits := length(trunc(v_abs)::text);
    else
        -- 10^k <= abs < 10^(k + 1): the logarithm's floor, corrected by two comparisons
        v_digits := least(floor(log(10, v_abs))::bigint, 131071);
        if v_abs < ('1e' || v_digits)::numeric then
            v_digits := v_digits - 1;
        elsif v_digits < 131071 and v_abs >= ('1e' || (v_digits + 1))::numeric then
            v_digits := v_digits + 1;
        end if;
        v_digits := v_digits + 1;
    end if;
    return (value < 0)::int + v_digits
        + case when scale(value) > 0 then scale(value) + 1 else 0 end;
end
$$;

-- _json_numbers: every number in `value`, as a JSON array, found 1000 levels at a time: one
-- jsonpath `.**` over a value nested deeper than a few thousand levels (which jsonb accepts)
-- would exceed max_stack_depth. Each round searches the containers found at the previous
-- round's last level; a value less than 1000 levels deep costs one extra walk that finds none.
create or replace function queue._json_numbers(value jsonb) returns jsonb
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_level jsonb := jsonb_build_array(value);
    v_found jsonb := '[]'::jsonb;
begin
    loop
        v_found := v_found || jsonb_path_query_array(v_level,
            'strict $[*].**{0 to 1000} ? (@.type() == "number")');
        v_level := jsonb_path_query_array(v_level,
            'strict $[*].**{1000} ? (@.type() == "object" || @.type() == "array")');
        exit when v_level = '[]'::jsonb;
    end loop;
    return v_found;
end
$$;

-- _json_size: how many bytes of JSON text `value` prints as, at a cost bounded by its stored
-- size and `bound`, never by the text (a few kilobytes of jsonb numbers print as gigabytes).
-- bytes is exact when exact, else a bound: over `bound`, the text is at least that long (the
-- text of its numbers alone); within it, at most that long; longest_number is the text length of the longest number, or a bound on it of at
-- most queue._max_number_chars(). Steps, each cheap when it is taken:
-- * at most 1024 stored bytes: printed (at most about 64 numbers: 9 MB of text at worst);
--   text of at most 1000 bytes holds no number longer than that;
-- * else its numbers, gathered (jsonb_path_query_array); at most 64 of them are printed
--   together (9 MB at worst), and when their text is at most 1000 bytes no number is longer;
--   otherwise each is measured without printing (queue._json_number_chars);
-- * once the numbers fit, the value's text is at most 6 times its stored size (escapes,
--   punctuation) plus theirs: within `bound` the value is not printed at all, else printed.
create or replace function queue._json_size(
    value jsonb, bound bigint, out bytes bigint, out exact boolean, out longest_number bigint
)
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_numbers jsonb;
    v_count int;
    v_chars bigint;
begin
    exact := true;
    longest_number := 0;
    if pg_column_size(value) <= 1024 then
        bytes := octet_length(value::text);
        if bytes <= 1000 then
            return;
        end if;
    end if;
    v_numbers := queue._json_numbers(value);
    v_count := jsonb_array_length(v_numbers);
    if v_count <= 64 then
        v_chars := octet_length(v_numbers::text) - 2 * greatest(v_count, 1);
    end if;
    if v_chars <= queue._max_number_chars() then
        longest_number := v_chars;
    else
        select coalesce(max(c.chars), 0), coalesce(sum(c.chars), 0)
        into longest_number, v_chars
        from jsonb_array_elements(v_numbers) as p (number),
            lateral (select p.number::numeric) as n (x),
            lateral (select case when abs(n.x) < 1e15
                then length(trunc(abs(n.x))::text) + (n.x < 0)::int
                    + case when scale(n.x) > 0 then scale(n.x) + 1 else 0 end
                else queue._json_number_chars(n.x) end) as c (chars);
    end if;
    if bytes is not null then
        return;
    end if;
    if longest_number > queue._max_number_chars() or v_chars > bound then
        bytes := v_chars;
        exact := false;
    elsif pg_column_compression(value) is null and 6 * pg_column_size(value) + v_chars <= bound
        then
        bytes := 6 * pg_column_size(value) + v_chars;
        exact := false;
    else
        bytes := octet_length(value::text);
    end if;
end
$$;

-- _max_number_chars: the longest JSON number andal stores, in characters of text (1000).
-- Longer numbers are refused in payloads, results, trace contexts and cached values: past it
-- a few bytes of request become kilobytes for every reader (1e999 prints 1000 digits), and
-- common readers cannot parse them anyway (Python refuses integers of more than 4300 digits,
-- JavaScript has none past 1.8e308). A number that long travels as a string.
create or replace function queue._max_number_chars() returns int
language sql immutable
set search_path = pg_catalog, pg_temp
as $$ select 1000 $$;

-- _json_fits: whether `value` passes queue._check_json with `bound` (for a caller that picks
-- the first failing element of many, or does something else than refuse).
create or replace function queue._json_fits(value jsonb, bound bigint) returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_size record;
begin
    v_size := queue._json_size(value, bound);
    return v_size.bytes <= bound and v_size.longest_number <= queue._max_number_chars();
end
$$;

-- _check_json: `value`'s JSON text is at most `bound` bytes and holds no number longer than
-- queue._max_number_chars(), measured by queue._json_size (bounded cost). Raises 54000: a
-- long number, or over the bound with message = format(over, argument, bytes, bound) (bytes
-- 'at least N' when the text was not printed) and hint `hint`.
create or replace function queue._check_json(
    value jsonb, argument text, bound bigint, over text, hint text
) returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_size record;
begin
    v_size := queue._json_size(value, bound);
    if v_size.longest_number > queue._max_number_chars() then
        raise exception '% holds a number of % characters of JSON text, over the limit of %',
            argument, v_size.longest_number, queue._max_number_chars()
            using errcode = '54000', hint = 'Send a number this long as a JSON string.';
    end if;
    if v_size.bytes > bound then
        raise exception using message = format(over, argument,
                case when v_size.exact then v_size.bytes::text
                    else 'at least ' || v_size.bytes end, bound),
            errcode = '54000', hint = hint;
    end if;
end
$$;

drop function if exists queue._payload_over(text, bigint, int);

-- _check_payload: a job payload is a non-null JSON object no larger than the queue's limit.
-- Raises 22004 (null), 22023 (not an object), 54000 (over payload_limit bytes of JSON text,
-- or a number longer than queue._max_number_chars()).
create or replace function queue._check_payload(payload jsonb, argument text, payload_limit int)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if payload is null then
        raise exception '% must not be null', argument using errcode = '22004';
    end if;
    if jsonb_typeof(payload) <> 'object' then
        raise exception '% must be a JSON object, not %', argument, jsonb_typeof(payload)
            using errcode = '22023';
    end if;
    -- The limit is on what a claimer receives: the JSON text, measured on every payload at a
    -- cost bounded by the stored size (queue._json_size), never by the text.
    perform queue._check_json(payload, argument, payload_limit,
        '%s is %s bytes, over the queue''s limit of %s bytes',
        'Store large data elsewhere and pass a reference, '
        'or raise the limit with queue.configure_queue(payload_limit => ...).');
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

-- _check_result: a result to keep is at most queue.config.max_result_bytes of JSON text and
-- holds no number longer than queue._max_number_chars(); returns it. Raises 54000.
create or replace function queue._check_result(result jsonb, argument text) returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    if result is null then
        return null;
    end if;
    perform queue._check_json(result, argument, (queue._limits()).max_result_bytes,
        '%s is %s bytes, over the limit of %s bytes for kept results',
        'Complete the job without a result (or fail it), or raise '
        'queue.config.max_result_bytes.');
    return result;
end
$$;

-- _refuse_read_only: the error of a call that writes (claim, complete) made in a read-only
-- transaction (BEGIN READ ONLY, default_transaction_read_only, a standby): 25006, as
-- PostgreSQL's own, but naming the call and what to do. Callers test
-- current_setting('transaction_read_only') inline (one expression on the hot path) and call
-- this only to raise.
create or replace function queue._refuse_read_only(call text) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception '% writes (it changes the jobs it is given): it cannot run in a read-only '
        'transaction', call
        using errcode = '25006',
        hint = 'Call it in a read-write transaction on the primary: not in BEGIN READ ONLY, '
        'not with default_transaction_read_only on, not on a standby.';
end
$$;

-- _caller: the role a SECURITY DEFINER function acts for: the caller's SET ROLE, else the
-- session user (inside such a function current_user is the definer, never the caller).
create or replace function queue._caller() returns name
language sql stable
set search_path = pg_catalog, pg_temp
as $$ select coalesce(nullif(current_setting('role'), 'none'), session_user)::name $$;

revoke all on function queue._check_name(text, text, boolean, int) from public;
revoke all on function queue._check_names(text [], text) from public;
revoke all on function queue._check_payload(jsonb, text, int) from public;
revoke all on function queue._json_number_chars(numeric) from public;
revoke all on function queue._json_size(jsonb, bigint) from public;
revoke all on function queue._max_number_chars() from public;
revoke all on function queue._json_numbers(jsonb) from public;
revoke all on function queue._json_fits(jsonb, bigint) from public;
revoke all on function queue._check_json(jsonb, text, bigint, text, text) from public;
revoke all on function queue._limits() from public;
revoke all on function queue._check_interval(interval, text, boolean, boolean, text) from public;
revoke all on function queue._check_priority(int) from public;
revoke all on function queue._check_result(jsonb, text) from public;
revoke all on function queue._caller() from public;
revoke all on function queue._refuse_read_only(text) from public;
