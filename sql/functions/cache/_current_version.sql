-- cache._current_version: queue coupling, called by queue.enqueue with a cache_key and no
-- cache_value. The key's current version (0 when it has no entry): the minimum version a
-- worker may use for this job. Raises nothing.
create or replace function cache._current_version(key text) returns bigint
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce((select e.version from cache.entries as e where e.key = $1), 0)
$$;

comment on function cache._current_version(text) is
'Queue coupling: the current version of a key (0 without an entry).';
revoke all on function cache._current_version(text) from public;
