-- A job's error history: its entries, and the bound on an error's text. Private: granted to
-- nobody.

-- _bound_error: an error text cut to queue.config.max_error_bytes (65,536 by default) bytes,
-- with the marker ' ... (cut at N bytes)' appended; shorter texts are returned unchanged.
-- Cut, never refused: a worker must always be able to record a failure. By characters (a
-- byte cut could split one), shortened until it fits. Every path that writes error history
-- (queue.fail, the take-back of an expired lease, queue.cancel) writes through
-- queue._error_entry and queue._add_error, which applies it; the dead letter's last_error is the same bounded
-- text. An entry's error is at most the bound plus the marker (under 32 bytes).
create or replace function queue._bound_error(error text) returns text
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit int;
begin
    -- the bound is read only for a long text: the common short error costs no query
    if error is null or octet_length(error) <= 1024 then
        return error;
    end if;
    v_limit := (queue._limits()).max_error_bytes;
    if octet_length(error) <= v_limit then
        return error;
    end if;
    error := left(error, v_limit);
    while octet_length(error) > v_limit loop
        error := left(error, length(error) - greatest((octet_length(error) - v_limit) / 4, 1));
    end loop;
    return error || format(' ... (cut at %s bytes)', v_limit);
end
$$;

-- _error_entry: one element of a job's error history, its error bounded (queue._bound_error).
create or replace function queue._error_entry(
    attempt int, error text, worker text, retry_in interval default null
) returns jsonb
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select jsonb_strip_nulls(jsonb_build_object(
        'attempt', attempt, 'error', queue._bound_error(error), 'worker', worker, 'at', now(),
        'retry_in', retry_in::text
    ))
$$;

-- _add_error: a job's error history with `entry` appended, keeping the newest 25 entries (each
-- names its attempt): a job retried hundreds of times must not grow a row of megabytes that
-- every later write copies into the WAL. The oldest entries go first.
create or replace function queue._add_error(errors jsonb, entry jsonb) returns jsonb
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select case when jsonb_array_length(coalesce(errors, '[]')) < 25
        then coalesce(errors, '[]') || jsonb_build_array(entry)
        else (select jsonb_agg(e.value order by e.n)
            from jsonb_array_elements(errors) with ordinality as e (value, n)
            where e.n > jsonb_array_length(errors) - 24) || jsonb_build_array(entry) end
$$;

revoke all on function queue._bound_error(text) from public;
revoke all on function queue._add_error(jsonb, jsonb) from public;
revoke all on function queue._error_entry(int, text, text, interval) from public;
