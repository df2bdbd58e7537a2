-- Private argument checks of the cache functions. Granted to nobody.

-- _check_key: a cache key is not null and 1 to 512 characters long (the limit of a job's
-- cache_key). Raises 22004 (null) or 22023 (empty or too long), naming the argument.
create or replace function cache._check_key(key text, argument text default 'key')
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if key is null then
        raise exception '% must not be null', argument using errcode = '22004';
    end if;
    if length(key) = 0 or length(key) > 512 then
        raise exception '% must be 1 to 512 characters long (got %)', argument, length(key)
            using errcode = '22023';
    end if;
end
$$;

-- _check_value: a value to cache is a JSON value other than null, no larger than
-- cache.config.max_value_bytes of JSON text, with no number longer than
-- queue._max_number_chars(). Raises 22004 (SQL null), 22023 (JSON null), 54000 (too large,
-- or a number too long).
create or replace function cache._check_value(value jsonb, argument text default 'value')
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit int;
begin
    if value is null then
        raise exception '% must not be null', argument using errcode = '22004',
            hint = 'Use cache.invalidate(key) to drop a value.';
    end if;
    if jsonb_typeof(value) = 'null' then
        raise exception '% must not be JSON null', argument using errcode = '22023',
            hint = 'A cached value is any JSON value but null; invalidate the key instead.';
    end if;
    -- no settings row must not mean no limit: then the column's default (1 MiB)
    v_limit := coalesce((select c.max_value_bytes from cache.config as c), 1048576);
    -- The limit is on what a reader receives: the JSON text, measured on every value at a
    -- cost bounded by its stored size (queue._json_size), never by the text.
    perform queue._check_json(value, argument, v_limit,
        '%s is %s bytes, over the cache''s limit of %s bytes',
        'Cache a smaller value, or raise cache.config.max_value_bytes.');
end
$$;

-- _check_refresh_queue: the caller may have refresh jobs put into queue_name: it may
-- enqueue (producer, admin), or the queue is listed in cache.config.refresh_queues. A worker
-- may not enqueue, so without the list a cache read would let it put jobs into any queue.
-- Raises 42501.
create or replace function cache._check_refresh_queue(queue_name text) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    if queue_name = any (coalesce((select c.refresh_queues from cache.config as c), '{}'))
        or pg_catalog.has_function_privilege(queue._caller(),
            'queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb)',
            'execute') then
        return;
    end if;
    raise exception 'refresh_queue % is not a refresh queue', queue_name
        using errcode = '42501',
        hint = 'A role that may not enqueue names only the queues listed in '
        'cache.config.refresh_queues (an admin adds them).';
end
$$;

comment on function cache._check_key(text, text) is
'Check a cache key argument: not null (22004), 1 to 512 characters (22023).';
comment on function cache._check_value(jsonb, text) is
'Check a value to cache: not null (22004), not JSON null (22023), within max_value_bytes (54000).';
revoke all on function cache._check_key(text, text) from public;
revoke all on function cache._check_value(jsonb, text) from public;
comment on function cache._check_refresh_queue(text) is
'Check that the caller may have refresh jobs put into a queue (42501 otherwise).';
revoke all on function cache._check_refresh_queue(text) from public;

-- _primary_only: the shared cache lives on the primary only: cache.entries, cache.epoch,
-- cache.usage and cache.source_changes are UNLOGGED, so a hot standby has no copy of them
-- (PostgreSQL refuses to read them during recovery, 0A000). A cache function that reads
-- them calls this first, so that on a standby it refuses with andal's own code and the fix
-- instead. Raises AN002 on a standby (pg_is_in_recovery()); nothing on a primary.
create or replace function cache._primary_only(fn text) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    if pg_is_in_recovery() then
        raise exception '% cannot run on a standby: the shared cache lives on the primary only', fn
            using errcode = 'AN002',
            detail = 'cache.entries is UNLOGGED: a standby has no copy of the cache''s entries '
                || '(a promoted standby starts with an empty cache and a new epoch).',
            hint = 'Read the cache on the primary: connect with target_session_attrs=read-write '
                || '(a libpq multi-host DSN reaches whichever server is the primary now).';
    end if;
end
$$;
revoke all on function cache._primary_only(text) from public;
