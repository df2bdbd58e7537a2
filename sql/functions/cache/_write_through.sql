-- cache._write_through: queue coupling, called by queue.enqueue with cache_key and
-- cache_value. Stores the value in the enqueuer's transaction (adaptive TTL, logged,
-- notified) and returns the new version, which the job carries as its cache_version.
-- Raises: 22004 null key or value; 22023 bad key or JSON null value; 54000 value too large.
create or replace function cache._write_through(key text, value jsonb) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform cache._check_key(_write_through.key, 'cache_key');
    perform cache._check_value(_write_through.value, 'cache_value');
    perform cache._hold_key(_write_through.key);  -- a job's end does not wait for it
    return cache._apply(_write_through.key, 'put', _write_through.value, null, 'enqueue');
end
$$;

comment on function cache._write_through(text, jsonb) is
'Queue coupling: write a job''s cache_value through at enqueue; returns the version.';
revoke all on function cache._write_through(text, jsonb) from public;
