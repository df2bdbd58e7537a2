-- A job's error history: its entries. Private: granted to nobody.

-- _error_entry: one element of a job's error history.
create or replace function queue._error_entry(
    attempt int, error text, worker text, retry_in interval default null
) returns jsonb
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select jsonb_strip_nulls(jsonb_build_object(
        'attempt', attempt, 'error', error, 'worker', worker, 'at', now(),
        'retry_in', retry_in::text
    ))
$$;
revoke all on function queue._error_entry(int, text, text, interval) from public;
