-- The schema of a fresh andal install (pg_dump --schema-only of schemas queue and cache,
-- normalised). Regenerate with `make schema-dump` in the commit that changes the schema;
-- tests/test_upgrade.py diffs it against a fresh install.
CREATE SCHEMA cache;

CREATE SCHEMA queue;

CREATE TYPE cache.change AS (
	seq bigint,
	key text,
	version bigint,
	op text,
	watermark bigint,
	xid bigint,
	snapshot pg_snapshot
);

CREATE TYPE queue.claimed AS (
	job_id bigint,
	queue text,
	category text,
	priority integer,
	payload jsonb,
	attempt integer,
	max_attempts integer,
	token uuid,
	lease_expires_at timestamp with time zone,
	enqueued_at timestamp with time zone,
	cache_key text,
	cache_version bigint,
	deadline timestamp with time zone
);

CREATE TYPE queue.dead_letter_info AS (
	job_id bigint,
	queue text,
	category text,
	reason text,
	attempts integer,
	max_attempts integer,
	enqueued_at timestamp with time zone,
	died_at timestamp with time zone,
	last_error text
);

CREATE TYPE queue.job_info AS (
	job_id bigint,
	state text,
	queue text,
	category text,
	priority integer,
	attempts integer,
	max_attempts integer,
	enqueued_at timestamp with time zone,
	available_at timestamp with time zone,
	started_at timestamp with time zone,
	finished_at timestamp with time zone,
	worker text,
	lease_expires_at timestamp with time zone,
	abort_requested_at timestamp with time zone,
	result jsonb,
	errors jsonb,
	kept_until timestamp with time zone
);

CREATE FUNCTION cache._adaptive_ttl(mean_interval double precision, changed_at timestamp with time zone) RETURNS interval
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select least(c.max_ttl, greatest(c.min_ttl,
        case
            when mean_interval is null then c.default_ttl
            else make_interval(secs => c.ttl_factor * greatest(mean_interval,
                coalesce(extract(epoch from now() - changed_at)::double precision, 0)))
        end))
    from cache.config as c
$$;

COMMENT ON FUNCTION cache._adaptive_ttl(mean_interval double precision, changed_at timestamp with time zone) IS 'clamp(ttl_factor * max(EWMA gap, time since last change), min_ttl, max_ttl); default_ttl before two changes.';

CREATE FUNCTION cache._apply(key text, op text, value jsonb, ttl interval, reason text, if_version bigint DEFAULT NULL::bigint) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_xid xid8 := pg_current_xact_id();
    v_old cache.entries;
    v_version bigint;
    v_checksum text;
    v_inserted boolean := false;
    v_size int := 0;
    v_added bigint;
begin
    if op not in ('put', 'invalidate') then
        raise exception 'op must be put or invalidate (got %)', op using errcode = '22023';
    end if;
    -- the mark is read here (one row), cache._full only when it is set
    if op = 'put' and (select u.full_since from cache.usage_state as u) is not null
       and cache._full() then
        if reason is null then
            return null;  -- not stored, as when if_version no longer matches
        end if;
        op := 'invalidate';
    end if;
    if op = 'put' then
        v_checksum := md5(value::text);
        v_size := pg_column_size(value);
    end if;
    loop
        select e.* into v_old from cache.entries as e where e.key = _apply.key for update;
        exit when found;
        if if_version is not null and if_version <> 0 then
            return null;
        end if;
        v_version := nextval('cache.change_seq');
        insert into cache.entries as e (
            key, value, checksum, version, stale, expires_at, written_at, changes, changed_at,
            invalidated_at, reason, size
        ) values (
            _apply.key,
            case when op = 'put' then _apply.value end,
            v_checksum,
            v_version,
            op = 'invalidate',
            case when op = 'put' then now() + coalesce(_apply.ttl, cache._adaptive_ttl(null, null)) end,
            now(),
            case when op = 'invalidate' then 1 else 0 end,
            case when op = 'invalidate' then now() end,
            case when op = 'invalidate' then now() end,
            left(_apply.reason, 200),
            v_size
        )
        on conflict (key) do nothing;
        if found then
            v_inserted := true;
            v_added := v_size;
            exit;
        end if;
        -- Another transaction created the key meanwhile: lock its row and update it.
    end loop;

    if not v_inserted then
        if if_version is not null and if_version <> v_old.version then
            return null;
        end if;
        v_version := nextval('cache.change_seq');
        v_added := cache._apply_update(_apply.key, op, _apply.value, _apply.ttl, _apply.reason,
            v_old, v_checksum, v_size, v_version);
    end if;
    if v_added <> 0 then
        -- cache._usage_add, inlined (the write path's cost): one of the session's own slots
        update cache.usage as u set bytes = u.bytes + v_added
        where u.slot = pg_backend_pid()::bigint * 64 + v_version % 64;
        if not found then
            perform cache._usage_add(v_added, v_version);
        end if;
        -- the bound is checked on one write in 64 (by version: no caller chooses it) and on
        -- every write of 64 kB or more
        if v_added > 0 and (v_version % 64 = 0 or v_added >= 65536) then
            perform cache._bound();
        end if;
    end if;

    insert into cache.log (seq, xid, key, op, reason)
    values (v_version, v_xid, _apply.key, op, left(_apply.reason, 200));
    perform queue._notify('andal_cache', v_xid::text);
    return v_version;
end
$$;

COMMENT ON FUNCTION cache._apply(key text, op text, value jsonb, ttl interval, reason text, if_version bigint) IS 'Write (put) or invalidate a key: new version, log row and NOTIFY hint in the caller''s transaction.';

CREATE FUNCTION cache._apply_deferred(max_writes integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_row record;
    v_n int := 0;
begin
    for v_row in
        select d.* from cache.deferred_writes as d order by d.id
        limit _apply_deferred.max_writes for update skip locked
    loop
        if pg_try_advisory_xact_lock_shared(1634628716, hashtext(v_row.key)) then
            perform cache._apply(v_row.key, v_row.op, v_row.value, null, v_row.reason);
            delete from cache.deferred_writes as d where d.id = v_row.id;
            v_n := v_n + 1;
        end if;
    end loop;
    return v_n;
end
$$;

CREATE FUNCTION cache._apply_or_defer(key text, op text, value jsonb, reason text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if pg_try_advisory_xact_lock_shared(1634628716, hashtext(_apply_or_defer.key)) then
        perform cache._apply(_apply_or_defer.key, op, value, null, reason);
    else
        insert into cache.deferred_writes (key, op, value, reason)
        values (_apply_or_defer.key, op, value, reason);
    end if;
end
$$;

CREATE UNLOGGED TABLE cache.entries (
    key text NOT NULL,
    value jsonb,
    checksum text,
    version bigint NOT NULL,
    stale boolean DEFAULT false NOT NULL,
    expires_at timestamp with time zone,
    written_at timestamp with time zone DEFAULT now() NOT NULL,
    changes bigint DEFAULT 0 NOT NULL,
    changed_at timestamp with time zone,
    mean_interval double precision,
    invalidated_at timestamp with time zone,
    reason text,
    size integer DEFAULT 0 NOT NULL
)
WITH (fillfactor='50', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='500', autovacuum_vacuum_cost_delay='0', autovacuum_analyze_scale_factor='0.05', toast.autovacuum_vacuum_scale_factor='0.02', toast.autovacuum_vacuum_threshold='500', toast.autovacuum_vacuum_cost_delay='0');

CREATE FUNCTION cache._apply_update(key text, op text, value jsonb, ttl interval, reason text, entry cache.entries, checksum text, size integer, version bigint) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_alpha double precision;
    v_changes bigint;
    v_changed_at timestamptz;
    v_mean double precision;
    v_gap double precision;
begin
    v_changes := entry.changes;
    v_changed_at := entry.changed_at;
    v_mean := entry.mean_interval;
    if op = 'invalidate' or (entry.value is not null and not entry.stale
                             and entry.checksum is distinct from _apply_update.checksum) then
        select c.ewma_alpha into v_alpha from cache.config as c;
        if entry.changed_at is not null then
            v_gap := greatest(
                extract(epoch from now() - entry.changed_at)::double precision, 0);
            v_mean := case when v_mean is null then v_gap
                           else v_alpha * v_gap + (1 - v_alpha) * v_mean end;
        end if;
        v_changes := v_changes + 1;
        v_changed_at := now();
    end if;
    if op = 'put' then
        update cache.entries as e
        set value = _apply_update.value, checksum = _apply_update.checksum,
            version = _apply_update.version, stale = false,
            expires_at = now()
                + coalesce(_apply_update.ttl, cache._adaptive_ttl(v_mean, v_changed_at)),
            written_at = now(), changes = v_changes, changed_at = v_changed_at,
            mean_interval = v_mean, size = _apply_update.size
        where e.key = _apply_update.key;
        return _apply_update.size - entry.size;
    else
        update cache.entries as e
        set version = _apply_update.version, stale = true, changes = v_changes,
            changed_at = v_changed_at, mean_interval = v_mean, invalidated_at = now(),
            reason = left(_apply_update.reason, 200)
        where e.key = _apply_update.key;
        return 0;  -- the old value stays
    end if;
end
$$;

CREATE FUNCTION cache._bound() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if cache._usage() > cache._cap() then
        perform cache._set_full(true);
    end if;
end
$$;

CREATE FUNCTION cache._cap() RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce((select c.max_total_bytes from cache.config as c), 1073741824)
$$;

CREATE FUNCTION cache._check_key(key text, argument text DEFAULT 'key'::text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION cache._check_key(key text, argument text) IS 'Check a cache key argument: not null (22004), 1 to 512 characters (22023).';

CREATE FUNCTION cache._check_refresh_queue(queue_name text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION cache._check_refresh_queue(queue_name text) IS 'Check that the caller may have refresh jobs put into a queue (42501 otherwise).';

CREATE FUNCTION cache._check_value(value jsonb, argument text DEFAULT 'value'::text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION cache._check_value(value jsonb, argument text) IS 'Check a value to cache: not null (22004), not JSON null (22023), within max_value_bytes (54000).';

CREATE FUNCTION cache._current_version(key text) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    select coalesce((select e.version from cache.entries as e where e.key = $1), 0)
$_$;

COMMENT ON FUNCTION cache._current_version(key text) IS 'Queue coupling: the current version of a key (0 without an entry).';

CREATE FUNCTION cache._enqueue_refresh(key text, queue_name text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_id bigint;
begin
    -- Read first: once the job exists, readers do not write at all.
    select j.id into v_id from queue.jobs as j
    where j.queue = queue_name and j.dedup_key = _enqueue_refresh.key;
    if v_id is null then
        v_id := queue.enqueue(payload => jsonb_build_object('key', _enqueue_refresh.key),
            queue => queue_name, dedup_key => _enqueue_refresh.key);
    end if;
    return v_id;
end
$$;

COMMENT ON FUNCTION cache._enqueue_refresh(key text, queue_name text) IS 'Enqueue one refresh job for a key, deduplicated by key in the given queue.';

CREATE FUNCTION cache._epoch() RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_epoch bigint;
begin
    select e.epoch into v_epoch from cache.epoch as e;
    if v_epoch is null then
        insert into cache.epoch as e (epoch) values (nextval('cache.epoch_seq'))
        on conflict (id) do nothing;
        select e.epoch into v_epoch from cache.epoch as e;
    end if;
    return v_epoch;
end
$$;

COMMENT ON FUNCTION cache._epoch() IS 'The shared cache''s epoch; a new one after a crash emptied the UNLOGGED cache tables.';

CREATE FUNCTION cache._evict(need bigint) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_freed bigint;
begin
    with ranked as (
        select e.key, sum(e.size) over (order by e.expires_at, e.key) - e.size as before
        from cache.entries as e
        where e.value is not null
    ),
    victims as (
        select e.key, e.size from cache.entries as e
        join ranked as r on r.key = e.key
        where r.before < need and e.value is not null
        for update of e skip locked
    ),
    gone as (
        update cache.entries as e
        set value = null, checksum = null, stale = true, invalidated_at = now(),
            reason = 'evicted', size = 0
        from victims as v
        where e.key = v.key
        returning v.size
    )
    select coalesce(sum(g.size), 0) into v_freed from gone as g;
    perform cache._usage_add(-v_freed, 0);
    return v_freed;
end
$$;

CREATE FUNCTION cache._full() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if (select u.full_since from cache.usage_state as u) is null then
        return false;
    end if;
    if cache._usage() > cache._cap() then
        return true;
    end if;
    perform cache._set_full(false);
    return false;
end
$$;

CREATE FUNCTION cache._hold_key(key text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if not exists (
        select from queue.install_state as s
        where pg_has_role(session_user, s.role_prefix || '_worker', 'usage')
           or pg_has_role(session_user, s.role_prefix || '_admin', 'usage')
    ) then
        perform pg_advisory_xact_lock(1634628716, hashtext(_hold_key.key));
    end if;
end
$$;

CREATE FUNCTION cache._invalidate(key text, reason text, job_id bigint, token uuid, fenced boolean) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform cache._primary_only('cache.invalidate');
    perform cache._check_key(_invalidate.key);
    if fenced then
        perform queue._check_fence(_invalidate.job_id, _invalidate.token);
    end if;
    return cache._apply(_invalidate.key, 'invalidate', null, null, _invalidate.reason);
end
$$;

COMMENT ON FUNCTION cache._invalidate(key text, reason text, job_id bigint, token uuid, fenced boolean) IS 'Private: the body of both cache.invalidate forms.';

CREATE FUNCTION cache._job_done(key text, policy text, result jsonb, reason text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform cache._check_key(_job_done.key, 'cache_key');
    if policy = 'none' then
        return;
    elsif policy = 'rewrite' and reason = 'completed' and result is not null
        and jsonb_typeof(result) <> 'null'
        and queue._json_fits(result,
            coalesce((select c.max_value_bytes from cache.config as c), 1048576)) then
        perform cache._apply_or_defer(_job_done.key, 'put', result, reason);
    elsif policy in ('invalidate', 'rewrite') then
        perform cache._apply_or_defer(_job_done.key, 'invalidate', null, reason);
    else
        raise exception 'policy must be invalidate, rewrite or none (got %)', policy
            using errcode = '22023';
    end if;
end
$$;

COMMENT ON FUNCTION cache._job_done(key text, policy text, result jsonb, reason text) IS 'Queue coupling: invalidate (or rewrite with the result) a finished job''s cache key.';

CREATE FUNCTION cache._metrics() RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    with e as (
        select
            count(*) filter (where value is not null and not stale
                and coalesce(expires_at > now(), true)) as fresh,
            count(*) filter (where value is not null and stale) as stale,
            count(*) filter (where value is not null and not stale and expires_at <= now())
                as expired,
            count(*) filter (where value is null) as tombstone
        from cache.entries
    ),
    l as (
        select
            count(*) filter (where op = 'put' and at > now() - interval '1 minute') as put_1m,
            count(*) filter (where op = 'put') as put_5m,
            count(*) filter (where op = 'invalidate' and at > now() - interval '1 minute')
                as inv_1m,
            count(*) filter (where op = 'invalidate') as inv_5m,
            count(*) filter (where reason = 'read-repair') as repair_5m
        from cache.log
        where at > now() - interval '5 minutes'
    ),
    newest as (
        select extract(epoch from now() - l.at) as age
        from cache.log as l order by l.xid desc, l.seq desc limit 1
    ),
    v as (
        select v.view::text as name,
            extract(epoch from now() - coalesce(v.refreshed_at, v.registered_at)) as lag,
            cache._view_changes(v.view) - v.seen_changes as pending
        from cache.views as v
        join pg_catalog.pg_class as c on c.oid = v.view
    ),
    lbl as (
        select '"' || replace(replace(replace(v.name, '\', '\\'), '"', '\"'), e'\n', '\n')
            || '"' as q, v.*
        from v
    )
    select concat(
        e'# HELP andal_cache_entries Shared cache entries by state.\n',
        e'# TYPE andal_cache_entries gauge\n',
        format(e'andal_cache_entries{state="fresh"} %s\n', e.fresh),
        format(e'andal_cache_entries{state="stale"} %s\n', e.stale),
        format(e'andal_cache_entries{state="expired"} %s\n', e.expired),
        format(e'andal_cache_entries{state="tombstone"} %s\n', e.tombstone),
        e'# HELP andal_cache_changes Cache writes and invalidations in a recent window.\n',
        e'# TYPE andal_cache_changes gauge\n',
        format(e'andal_cache_changes{op="put",window="1m"} %s\n', l.put_1m),
        format(e'andal_cache_changes{op="put",window="5m"} %s\n', l.put_5m),
        format(e'andal_cache_changes{op="invalidate",window="1m"} %s\n', l.inv_1m),
        format(e'andal_cache_changes{op="invalidate",window="5m"} %s\n', l.inv_5m),
        e'# HELP andal_cache_read_repairs Entries invalidated by read-repair (checksum).\n',
        e'# TYPE andal_cache_read_repairs gauge\n',
        format(e'andal_cache_read_repairs{window="5m"} %s\n', l.repair_5m),
        e'# HELP andal_cache_seconds_since_last_change Age of the newest cache log row.\n',
        e'# TYPE andal_cache_seconds_since_last_change gauge\n',
        (select format(e'andal_cache_seconds_since_last_change %s\n', n.age) from newest as n),
        e'# HELP andal_cache_epoch Epoch of the shared cache (changes after a crash).\n',
        e'# TYPE andal_cache_epoch gauge\n',
        format(e'andal_cache_epoch %s\n', coalesce((select ep.epoch from cache.epoch as ep), 0)),
        e'# HELP andal_cache_view_lag_seconds Age of a materialized view''s data.\n',
        e'# TYPE andal_cache_view_lag_seconds gauge\n',
        (select string_agg(format(e'andal_cache_view_lag_seconds{view=%s} %s\n', q, lag), ''
            order by name) from lbl),
        e'# HELP andal_cache_view_pending_changes Source row changes since the last refresh.\n',
        e'# TYPE andal_cache_view_pending_changes gauge\n',
        (select string_agg(format(e'andal_cache_view_pending_changes{view=%s} %s\n', q, pending),
            '' order by name) from lbl),
        e'# HELP andal_cache_reads Driver-reported cache reads of the last hour, by result.\n',
        e'# TYPE andal_cache_reads gauge\n',
        (select string_agg(format(e'andal_cache_reads{pool=%s,job_type=%s,result="%s"} %s\n',
            queue._prom_label(s.labels ->> 'pool'), queue._prom_label(s.labels ->> 'job_type'),
            s.labels ->> 'result', s.value), '' order by s.labels::text)
         from cache.stats() as s where s.metric = 'reads'),
        e'# HELP andal_cache_hit_ratio (local + shared hits) / reads, last hour.\n',
        e'# TYPE andal_cache_hit_ratio gauge\n',
        (select string_agg(format(e'andal_cache_hit_ratio{pool=%s,job_type=%s} %s\n',
            queue._prom_label(s.labels ->> 'pool'), queue._prom_label(s.labels ->> 'job_type'),
            s.value), '' order by s.labels::text)
         from cache.stats() as s where s.metric = 'hit_ratio' and s.value is not null),
        e'# HELP andal_cache_stale_overdue Entries stale or expired for over a minute.\n',
        e'# TYPE andal_cache_stale_overdue gauge\n',
        (select format(e'andal_cache_stale_overdue %s\n', s.value)
         from cache.stats() as s where s.metric = 'stale_overdue')
    )
    from e cross join l
$$;

COMMENT ON FUNCTION cache._metrics() IS 'The shared cache''s figures as Prometheus text, appended by queue.metrics().';

CREATE FUNCTION cache._primary_only(fn text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION cache._put(key text, value jsonb, ttl interval, if_version bigint, job_id bigint, token uuid, fenced boolean) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform cache._primary_only('cache.put');
    perform cache._check_key(_put.key);
    perform cache._check_value(_put.value);
    perform queue._check_interval(_put.ttl, 'ttl', true, false);
    if _put.if_version is not null and _put.if_version < 0 then
        raise exception 'if_version must not be negative (got %)', _put.if_version
            using errcode = '22023';
    end if;
    if fenced then
        perform queue._check_fence(_put.job_id, _put.token);
    end if;
    perform cache._hold_key(_put.key);  -- a job's end does not wait for this write
    return cache._apply(_put.key, 'put', _put.value, _put.ttl, null, _put.if_version);
end
$$;

COMMENT ON FUNCTION cache._put(key text, value jsonb, ttl interval, if_version bigint, job_id bigint, token uuid, fenced boolean) IS 'Private: the body of both cache.put forms.';

CREATE FUNCTION cache._set_full(is_full boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    -- a missing row (the table was emptied) must not mean "never full"
    if is_full and not exists (select from cache.usage_state) then
        insert into cache.usage_state (id) values (true) on conflict (id) do nothing;
    end if;
    update cache.usage_state as u
    set full_since = case when is_full then coalesce(u.full_since, now()) end
    where u.id in (select x.id from cache.usage_state as x for update skip locked)
      and (u.full_since is null) = is_full;
    if is_full and found then
        update queue.schedules as s set next_at = now()
        where s.name in (
            select x.name from queue.schedules as x
            where x.name = 'andal.cache_prune' and x.next_at > now()
            for update skip locked);
    end if;
end
$$;

CREATE FUNCTION cache._track_changes() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    insert into cache.source_changes as c (source, backend, changes, last_change_at)
    values (tg_relid, pg_backend_pid(), 1, now())
    on conflict (source, backend) do update
    set changes = c.changes + 1, last_change_at = excluded.last_change_at;
    return null;
end
$$;

COMMENT ON FUNCTION cache._track_changes() IS 'Trigger: count a TRUNCATE of a tracked table (row changes come from the statistics).';

CREATE FUNCTION cache._usage() RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(sum(u.bytes), 0)::bigint from cache.usage as u
$$;

CREATE FUNCTION cache._usage_add(delta bigint, part bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_slot bigint := pg_backend_pid()::bigint * 64 + part % 64;
begin
    if delta = 0 then
        return;
    end if;
    update cache.usage as u set bytes = u.bytes + delta where u.slot = v_slot;
    if not found then
        insert into cache.usage as u (slot, bytes) values (v_slot, delta)
        on conflict (slot) do update set bytes = u.bytes + excluded.bytes;
    end if;
end
$$;

CREATE FUNCTION cache._view_changes(view regclass) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    select coalesce((
        select sum(pg_stat_get_tuples_inserted(p.relid) + pg_stat_get_tuples_updated(p.relid)
                   + pg_stat_get_tuples_deleted(p.relid))
        from cache.view_sources as s
        cross join lateral (
            select s.source::oid as relid  -- a plain table (a partitioned one counts 0 itself)
            union
            select t.relid from pg_partition_tree(s.source) as t where t.isleaf
        ) as p
        where s.view = $1
    ), 0)::bigint
    + coalesce((
        select sum(c.changes)
        from cache.view_sources as s
        join cache.source_changes as c on c.source = s.source::oid
        where s.view = $1
    ), 0)::bigint
$_$;

COMMENT ON FUNCTION cache._view_changes(view regclass) IS 'Changes of the sources a view tracks: rows from the statistics, plus counted TRUNCATEs.';

CREATE FUNCTION cache._write_through(key text, value jsonb) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform cache._check_key(_write_through.key, 'cache_key');
    perform cache._check_value(_write_through.value, 'cache_value');
    perform cache._hold_key(_write_through.key);  -- a job's end does not wait for it
    return cache._apply(_write_through.key, 'put', _write_through.value, null, 'enqueue');
end
$$;

COMMENT ON FUNCTION cache._write_through(key text, value jsonb) IS 'Queue coupling: write a job''s cache_value through at enqueue; returns the version.';

CREATE FUNCTION cache.changes_since(watermark bigint, epoch bigint DEFAULT NULL::bigint, lim integer DEFAULT 10000, after_xid bigint DEFAULT NULL::bigint, after_seq bigint DEFAULT NULL::bigint, snapshot pg_snapshot DEFAULT NULL::pg_snapshot) RETURNS SETOF cache.change
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_epoch bigint;
    v_snap pg_snapshot := pg_current_snapshot();
    v_pruned xid8;
    v_w xid8;
    v_after xid8;
    v_prev_xmax xid8;
    v_prev_xip xid8[];
begin
    perform cache._primary_only('cache.changes_since');
    if changes_since.watermark < 0 then
        raise exception 'watermark must not be negative (got %)', changes_since.watermark
            using errcode = '22023';
    end if;
    if changes_since.after_xid < 0 then
        raise exception 'after_xid must not be negative (got %)', changes_since.after_xid
            using errcode = '22023';
    end if;
    if changes_since.lim is null or changes_since.lim < 1 or changes_since.lim > 100000 then
        raise exception 'lim must be between 1 and 100000 (got %)', changes_since.lim
            using errcode = '22023';
    end if;
    v_epoch := cache._epoch();
    select l.pruned_xid into v_pruned from cache.log_state as l;
    v_w := changes_since.watermark::text::xid8;

    if changes_since.epoch is distinct from v_epoch or changes_since.watermark is null
        or v_w <= v_pruned or v_w > pg_snapshot_xmax(v_snap) then
        -- Every transaction at or below the cut had ended when it was made (cache.prune
        -- only cuts below the xmin of its snapshot), so resuming above it skips nothing.
        return query select null::bigint, null::text, v_epoch, 'flush'::text,
            greatest(pg_snapshot_xmin(v_snap), (v_pruned::text::bigint + 1)::text::xid8)
                ::text::bigint,
            null::bigint,
            case when pg_current_xact_id_if_assigned() is null then v_snap end;
        return;
    end if;

    v_after := changes_since.after_xid::text::xid8;
    if changes_since.snapshot is not null then
        v_prev_xmax := pg_snapshot_xmax(changes_since.snapshot);
        v_prev_xip := array(select pg_snapshot_xip(changes_since.snapshot));
    end if;

    -- One statement: the rows and the snapshot (and X) they were read with. A snapshot taken
    -- in a transaction that has an id does not list that transaction as running although
    -- its rows may still commit: none is returned then (the reader stays in watermark mode).
    return query
    with s as (
        select pg_current_snapshot() as snap,
            pg_snapshot_xmin(pg_current_snapshot()) as x,
            pg_current_xact_id_if_assigned() is null as clean
    ),
    l as (
        -- Two index scans: the transactions the previous snapshot saw running (snapshot
        -- mode), and everything from its xmax on (or from the watermark).
        select u.seq, u.key, u.op, u.xid
        from (
            select l.seq, l.key, l.op, l.xid from cache.log as l
            where l.xid = any (v_prev_xip) and l.xid >= v_w
            union all
            select l.seq, l.key, l.op, l.xid from cache.log as l
            where l.xid >= greatest(v_w, coalesce(v_prev_xmax, v_w))
        ) as u
        where v_after is null
           or (u.xid, u.seq) > (v_after, coalesce(changes_since.after_seq, 0))
        order by u.xid, u.seq
        limit changes_since.lim + 1
    ),
    r as (
        select l.seq, l.key, l.op, l.xid,
            row_number() over (order by l.xid, l.seq) as rn,
            lead(l.xid) over (order by l.xid, l.seq) as next_xid
        from l
    )
    select r.seq, r.key, r.seq, coalesce(r.op, 'watermark'),
        greatest(v_w, least(s.x, coalesce(r.next_xid, s.x)))::text::bigint,
        r.xid::text::bigint,
        case when s.clean then s.snap end
    from s left join r on r.rn <= changes_since.lim
    order by r.rn;
end
$$;

COMMENT ON FUNCTION cache.changes_since(watermark bigint, epoch bigint, lim integer, after_xid bigint, after_seq bigint, snapshot pg_snapshot) IS 'Log rows after a transaction-id watermark (or snapshot), each with the position to resume from.';

CREATE FUNCTION cache.get(key text, refresh_queue text DEFAULT NULL::text) RETURNS TABLE(value jsonb, version bigint, stale boolean, expires_at timestamp with time zone, checksum text)
    LANGUAGE plpgsql SECURITY DEFINER ROWS 1
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_e cache.entries;
    v_stale boolean;
begin
    perform cache._primary_only('cache.get');
    perform cache._check_key(get.key);
    select e.* into v_e from cache.entries as e where e.key = get.key;
    v_stale := v_e.stale or v_e.value is null or coalesce(v_e.expires_at <= now(), false);
    if get.refresh_queue is not null and (v_e.key is null or v_stale) then
        perform cache._check_key(get.refresh_queue, 'refresh_queue');
        perform cache._check_refresh_queue(get.refresh_queue);
        perform cache._enqueue_refresh(get.key, get.refresh_queue);
    end if;
    if v_e.key is not null then
        return query select v_e.value, v_e.version, v_stale, v_e.expires_at, v_e.checksum;
    end if;
end
$$;

COMMENT ON FUNCTION cache.get(key text, refresh_queue text) IS 'The shared entry of a key (value, version, stale, expires_at, checksum), or no row.';

CREATE FUNCTION cache.get_many(keys text[], refresh_queue text DEFAULT NULL::text) RETURNS TABLE(key text, value jsonb, version bigint, stale boolean, expires_at timestamp with time zone, checksum text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_key text;
begin
    perform cache._primary_only('cache.get_many');
    if get_many.keys is null then
        raise exception 'keys must not be null' using errcode = '22004';
    end if;
    if cardinality(get_many.keys) > 10000 then
        raise exception 'keys must hold at most 10000 keys (got %)', cardinality(get_many.keys)
            using errcode = '22023';
    end if;
    foreach v_key in array get_many.keys loop
        perform cache._check_key(v_key, 'keys element');
    end loop;
    if get_many.refresh_queue is not null then
        perform cache._check_key(get_many.refresh_queue, 'refresh_queue');
        perform cache._check_refresh_queue(get_many.refresh_queue);
        -- a refresh job is deduplicated against other transactions' (queue.enqueue)
        if current_setting('transaction_isolation') <> 'read committed' then
            raise exception 'cache.get_many with a refresh_queue must run at READ COMMITTED '
                'isolation (not %)', current_setting('transaction_isolation')
                using errcode = '55000',
                hint = 'Read without refresh_queue, or in a READ COMMITTED transaction.';
        end if;
        -- Refresh jobs are enqueued in one canonical order (each key once, sorted), so two
        -- readers of overlapping keys in different orders never wait on each other in a
        -- cycle (no deadlock).
        for v_key in
            select distinct k.key collate "C" from unnest(get_many.keys) as k (key)
            left join cache.entries as e on e.key = k.key
            where e.key is null or e.stale or e.value is null or e.expires_at <= now()
            order by 1
        loop
            perform cache._enqueue_refresh(v_key, get_many.refresh_queue);
        end loop;
    end if;
    return query
    select e.key, e.value, e.version,
        e.stale or e.value is null or coalesce(e.expires_at <= now(), false),
        e.expires_at, e.checksum
    from cache.entries as e
    where e.key = any (get_many.keys);
end
$$;

COMMENT ON FUNCTION cache.get_many(keys text[], refresh_queue text) IS 'The shared entries of several keys (one row per key that has an entry).';

CREATE FUNCTION cache.invalidate(key text, reason text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select cache._invalidate(key, reason, null, null, false)
$$;

COMMENT ON FUNCTION cache.invalidate(key text, reason text) IS 'Mark a key stale (logged, notified); returns its new version.';

CREATE FUNCTION cache.invalidate(key text, job_id bigint, token uuid, reason text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select cache._invalidate(key, reason, job_id, token, true)
$$;

COMMENT ON FUNCTION cache.invalidate(key text, job_id bigint, token uuid, reason text) IS 'Mark a key stale on behalf of a running job: refused (AN001) once its token is stale.';

CREATE FUNCTION cache.prune(log_keep interval DEFAULT NULL::interval, entries_keep interval DEFAULT '1 day'::interval) RETURNS TABLE(log_rows bigint, entries bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_keep interval;
    v_xid xid8;
    v_log bigint;
    v_entries bigint;
    v_bytes bigint;
begin
    perform queue._check_interval(prune.log_keep, 'log_keep', false, false);
    perform queue._check_interval(prune.entries_keep, 'entries_keep', false, false);
    select coalesce(prune.log_keep, c.log_keep) into v_keep from cache.config as c;
    with gone as (
        delete from cache.log as l
        where l.at < now() - v_keep
          and l.xid < pg_snapshot_xmin(pg_current_snapshot())
        returning l.xid
    )
    select count(*), max(g.xid) into v_log, v_xid from gone as g;
    if v_xid is not null then
        update cache.log_state as s
        set pruned_xid = greatest(s.pruned_xid, v_xid), pruned_at = now();
    end if;

    with doomed as (
        select e.key from cache.entries as e
        where (e.stale or e.value is null or e.expires_at <= now())
          and case when e.stale or e.value is null
                   then coalesce(e.invalidated_at, e.written_at)
                   else e.expires_at end
              < now() - coalesce(prune.entries_keep, interval '1 day')
        for update skip locked
    ),
    gone as (
        delete from cache.entries as e using doomed as d where e.key = d.key returning e.size
    )
    select count(*), coalesce(sum(g.size), 0) into v_entries, v_bytes from gone as g;
    perform cache._usage_add(-v_bytes, 0);
    -- over the size bound: evict down to nine tenths of it, then the cache is not full
    v_bytes := cache._usage() - cache._cap() * 9 / 10;
    if cache._usage() > cache._cap() then
        perform cache._evict(v_bytes);
    end if;
    if cache._usage() <= cache._cap() then
        perform cache._set_full(false);
    end if;
    -- fold the sessions' slots of the size counter into slot 0 (those not held by a writer)
    with folded as (
        delete from cache.usage as u
        where u.slot in (
            select s.slot from cache.usage as s where s.slot <> 0 for update skip locked)
        returning u.bytes
    )
    select coalesce(sum(f.bytes), 0) into v_bytes from folded as f;
    if v_bytes <> 0 then
        insert into cache.usage as u (slot, bytes) values (0, v_bytes)
        on conflict (slot) do update set bytes = u.bytes + excluded.bytes;
    end if;
    return query select v_log, v_entries;
end
$$;

COMMENT ON FUNCTION cache.prune(log_keep interval, entries_keep interval) IS 'Maintenance: cut the log (readers behind the cut flush) and drop long-stale entries.';

CREATE FUNCTION cache.put(key text, value jsonb, ttl interval DEFAULT NULL::interval, if_version bigint DEFAULT NULL::bigint) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select cache._put(key, value, ttl, if_version, null, null, false)
$$;

COMMENT ON FUNCTION cache.put(key text, value jsonb, ttl interval, if_version bigint) IS 'Store a value; returns the new version (null: not stored, if_version no longer matches or the cache is full).';

CREATE FUNCTION cache.put(key text, value jsonb, job_id bigint, token uuid, ttl interval DEFAULT NULL::interval, if_version bigint DEFAULT NULL::bigint) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select cache._put(key, value, ttl, if_version, job_id, token, true)
$$;

COMMENT ON FUNCTION cache.put(key text, value jsonb, job_id bigint, token uuid, ttl interval, if_version bigint) IS 'Store a value on behalf of a running job: refused (AN001) once its token is stale.';

CREATE FUNCTION cache.refill(key text, value jsonb, ttl interval DEFAULT NULL::interval, if_version bigint DEFAULT NULL::bigint) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform set_config('synchronous_commit', 'off', true);
    return cache._put(refill.key, refill.value, refill.ttl, refill.if_version, null, null,
        false);
end
$$;

COMMENT ON FUNCTION cache.refill(key text, value jsonb, ttl interval, if_version bigint) IS 'cache.put for a refill after a miss: its transaction commits without waiting for the WAL flush.';

CREATE FUNCTION cache.refresh_due() RETURNS TABLE(view regclass, job_id bigint, pending bigint, lag interval)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_r record;
    v_name text;
begin
    perform cache._primary_only('cache.refresh_due');
    with gone as (
        delete from cache.source_changes as c
        where c.backend <> 0
          and not exists (select from pg_catalog.pg_stat_activity as a where a.pid = c.backend)
        returning c.source, c.changes, c.last_change_at
    )
    insert into cache.source_changes as c (source, backend, changes, last_change_at)
    select g.source, 0, sum(g.changes), max(g.last_change_at) from gone as g group by g.source
    on conflict (source, backend) do update
    set changes = c.changes + excluded.changes,
        last_change_at = greatest(c.last_change_at, excluded.last_change_at);

    for v_r in
        select v.view as v_view, v.max_lag, v.max_changes,
            cache._view_changes(v.view) - v.seen_changes as v_pending,
            now() - coalesce(v.refreshed_at, v.registered_at) as v_lag
        from cache.views as v
        join pg_catalog.pg_class as c on c.oid = v.view
        order by v.view
    loop
        continue when v_r.v_pending = 0;
        continue when v_r.v_pending > 0 and v_r.v_pending < v_r.max_changes
            and v_r.v_lag < v_r.max_lag;
        v_name := v_r.v_view::text;
        return query select v_r.v_view,
            queue.enqueue(
                payload => jsonb_build_object('view', v_name),
                queue => 'andal.refresh',
                category => 'refresh:' || case when length(v_name) <= 120 then v_name
                                               else v_r.v_view::oid::text end,
                dedup_key => left(v_name, 512)),
            v_r.v_pending, v_r.v_lag;
    end loop;
end
$$;

COMMENT ON FUNCTION cache.refresh_due() IS 'Enqueue one refresh job per materialized view past its lag or change budget.';

CREATE FUNCTION cache.refresh_view(view regclass) RETURNS interval
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_seen bigint;
    v_start timestamptz;
    v_populated boolean;
begin
    if refresh_view.view is null then
        raise exception 'view must not be null' using errcode = '22004';
    end if;
    if not exists (select from cache.views as v where v.view = refresh_view.view) then
        raise exception 'view % is not registered', refresh_view.view using errcode = '42704',
            hint = 'Call cache.register_view first.';
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'cache.refresh_view must run at READ COMMITTED isolation (not %)',
            current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'The refresh must take its snapshot after the change count is read.';
    end if;
    select c.relispopulated into v_populated
    from pg_catalog.pg_class as c where c.oid = refresh_view.view;
    v_seen := cache._view_changes(refresh_view.view);
    v_start := clock_timestamp();
    if v_populated then
        execute format('refresh materialized view concurrently %s', refresh_view.view::text);
    else
        execute format('refresh materialized view %s', refresh_view.view::text);
    end if;
    update cache.views as v
    set seen_changes = v_seen, refreshed_at = v_start,
        last_duration = clock_timestamp() - v_start, refreshes = v.refreshes + 1
    where v.view = refresh_view.view;
    return clock_timestamp() - v_start;
end
$$;

COMMENT ON FUNCTION cache.refresh_view(view regclass) IS 'Refresh job body: REFRESH MATERIALIZED VIEW CONCURRENTLY a registered view.';

CREATE FUNCTION cache.register_view(view regclass, max_lag interval, max_changes bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_kind "char";
    v_owner oid;
begin
    if register_view.view is null then
        raise exception 'view must not be null' using errcode = '22004';
    end if;
    if register_view.max_lag is null then
        raise exception 'max_lag must not be null' using errcode = '22004';
    end if;
    if register_view.max_changes is null then
        raise exception 'max_changes must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(register_view.max_lag, 'max_lag', true, false);
    if register_view.max_changes < 1 then
        raise exception using errcode = '22023',
            message = format('max_changes must be at least 1 (got %s)', register_view.max_changes);
    end if;
    select c.relkind, c.relowner into v_kind, v_owner
    from pg_catalog.pg_class as c where c.oid = register_view.view;
    if v_kind is null then
        raise exception 'view % does not exist', register_view.view::oid using errcode = '42704';
    end if;
    if v_kind <> 'm' then
        raise exception using errcode = '22023',
            message = format('view must be a materialized view (%s is not)', register_view.view);
    end if;
    if not exists (
        select from pg_catalog.pg_index as i
        where i.indrelid = register_view.view and i.indisunique and i.indisvalid
          and i.indpred is null and i.indexprs is null
    ) then
        raise exception 'view % has no unique index on plain columns', register_view.view
            using errcode = '55000',
            hint = 'REFRESH MATERIALIZED VIEW CONCURRENTLY needs one: create unique index '
                'on the view (its key columns), without WHERE or expressions.';
    end if;
    -- The caller's own right first (inside this function current_user is andal's owner):
    -- refreshing a materialized view is its owner's right, so only a member of the owner
    -- may have andal refresh it.
    if not pg_catalog.pg_has_role(queue._caller(), v_owner, 'USAGE') then
        raise exception 'role % may not refresh view % (only its owner may)', queue._caller(),
            register_view.view
            using errcode = '42501',
            hint = 'Register the view as (a member of) its owner.';
    end if;
    if not pg_catalog.pg_has_role(current_user, v_owner, 'USAGE') then
        raise exception 'andal''s owner % may not refresh view %', current_user,
            register_view.view
            using errcode = '42501',
            hint = 'Make the view''s owner a role andal''s owner is a member of.';
    end if;
    insert into cache.views as v (view, max_lag, max_changes)
    values (register_view.view, register_view.max_lag, register_view.max_changes)
    on conflict (view) do update
    set max_lag = excluded.max_lag, max_changes = excluded.max_changes;
end
$$;

COMMENT ON FUNCTION cache.register_view(view regclass, max_lag interval, max_changes bigint) IS 'Keep a materialized view fresh as queue work: refresh past max_lag or max_changes.';

CREATE FUNCTION cache.report_reads(pool text, counts jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_n int;
begin
    perform queue._check_name(report_reads.pool, 'pool');
    if report_reads.counts is null then
        raise exception 'counts must not be null' using errcode = '22004';
    end if;
    if jsonb_typeof(report_reads.counts) <> 'object' then
        raise exception 'counts must map job types to objects of non-negative counters'
            using errcode = '22023',
            hint = 'Example: {"mail": {"local_hit": 10, "shared_hit": 2, "miss": 1}}';
    end if;
    if (select count(*) from jsonb_object_keys(report_reads.counts)) > 1000 then
        raise exception 'counts must hold at most 1000 job types' using errcode = '22023';
    end if;
    -- whole numbers of the bigint range (a jsonb number may have 131,072 digits)
    if exists (
        select from jsonb_each(report_reads.counts) as e (k, v)
        where jsonb_typeof(e.v) <> 'object' or length(e.k) not between 1 and 128
            or exists (select from jsonb_each(e.v) as c (n, x)
                       where jsonb_typeof(c.x) <> 'number'
                          or (c.x)::numeric not between 0 and 9223372036854775807
                          or (c.x)::numeric <> trunc((c.x)::numeric))
    ) then
        raise exception 'counts must map job types to objects of non-negative counters'
            using errcode = '22023',
            hint = 'Example: {"mail": {"local_hit": 10, "shared_hit": 2, "miss": 1}}';
    end if;
    insert into cache.read_stats as s (
        minute, pool, job_type, backend, local_hits, shared_hits, stale_hits, misses
    )
    select date_trunc('minute', now()), report_reads.pool, e.k, pg_backend_pid(),
        coalesce((e.v ->> 'local_hit')::numeric::bigint, 0),
        coalesce((e.v ->> 'shared_hit')::numeric::bigint, 0),
        coalesce((e.v ->> 'stale_hit')::numeric::bigint, 0),
        coalesce((e.v ->> 'miss')::numeric::bigint, 0)
    from jsonb_each(report_reads.counts) as e (k, v)
    on conflict (minute, pool, job_type, backend) do update
    set local_hits = s.local_hits + excluded.local_hits,
        shared_hits = s.shared_hits + excluded.shared_hits,
        stale_hits = s.stale_hits + excluded.stale_hits,
        misses = s.misses + excluded.misses;
    get diagnostics v_n = row_count;
    delete from cache.read_stats as s where s.minute < now() - interval '1 day'
        and s.backend = pg_backend_pid();
    return v_n;
end
$$;

COMMENT ON FUNCTION cache.report_reads(pool text, counts jsonb) IS 'Add a driver''s cache read counters (per job type) to its pool''s stats.';

CREATE FUNCTION cache.reset() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_epoch bigint := nextval('cache.epoch_seq');
begin
    -- a write deferred before the reset would bring an old value back: it goes too
    truncate cache.entries, cache.usage, cache.deferred_writes;
    update cache.usage_state set full_since = null;
    insert into cache.epoch as e (epoch) values (v_epoch)
    on conflict (id) do update set epoch = excluded.epoch, started_at = now();
    return v_epoch;
end
$$;

COMMENT ON FUNCTION cache.reset() IS 'Empty the shared cache and start a new epoch (every local cache flushes).';

CREATE FUNCTION cache.stats(stale_after interval DEFAULT '00:01:00'::interval) RETURNS TABLE(metric text, labels jsonb, value double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_entries double precision;
    v_bytes double precision;
    v_value_bytes double precision;
    v_overdue double precision;
begin
    perform queue._check_interval(stats.stale_after, 'stale_after');
    if not pg_is_in_recovery() then  -- a standby has no copy of the UNLOGGED entries
        select count(*), count(*) filter (where e.value is not null and (
                (e.stale and e.invalidated_at < now() - stats.stale_after)
                or (not e.stale and e.expires_at < now() - stats.stale_after)))
        into v_entries, v_overdue from cache.entries as e;
        v_bytes := pg_total_relation_size('cache.entries'::regclass);
        v_value_bytes := cache._usage();
    end if;
    return query
    with r as (
        select s.pool, s.job_type, sum(s.local_hits) as lh, sum(s.shared_hits) as sh,
            sum(s.stale_hits) as st, sum(s.misses) as mi
        from cache.read_stats as s
        where s.minute >= date_trunc('minute', now()) - interval '59 minutes'
        group by 1, 2
    ),
    inv as (
        select count(*) filter (where l.op = 'invalidate') as n,
            count(*) filter (where l.reason = 'read-repair') as repairs
        from cache.log as l where l.at > now() - interval '5 minutes'
    ),
    ready as (
        select count(*) as n from queue.jobs as j
        where j.status = 'pending' and j.available_at <= now()
    )
    select 'entries', '{}'::jsonb, v_entries
    union all
    select 'bytes', '{}', v_bytes
    union all
    select 'value_bytes', '{}', v_value_bytes
    union all
    select 'max_total_bytes', '{}',
        (select c.max_total_bytes from cache.config as c)::double precision
    union all
    select 'reads', jsonb_build_object('pool', r.pool, 'job_type', r.job_type, 'result', x.k),
        x.v::double precision
    from r cross join lateral (values
        ('local_hit', r.lh), ('shared_hit', r.sh), ('stale_hit', r.st), ('miss', r.mi)
    ) as x (k, v)
    union all
    select 'hit_ratio', jsonb_build_object('pool', r.pool, 'job_type', r.job_type),
        ((r.lh + r.sh) / nullif(r.lh + r.sh + r.st + r.mi, 0))::double precision
    from r
    union all
    select 'invalidations_per_minute', '{}', (select inv.n from inv) / 5.0
    union all
    select 'queue_ready', '{}', (select ready.n from ready)::double precision
    union all
    select 'invalidations_per_ready_job', '{}',
        ((select inv.n from inv) / 5.0 / nullif((select ready.n from ready), 0))::double precision
    union all
    select 'stale_overdue', '{}', v_overdue
    union all
    select 'checksum_failures_1h', '{}', count(*)::double precision from cache.log as l
    where l.reason = 'read-repair' and l.at > now() - interval '1 hour'
    union all
    select 'seconds_since_last_invalidation', '{}',
        date_part('epoch', now() - max(l.at)) from cache.log as l where l.op = 'invalidate'
    union all
    select 'view_lag_seconds', jsonb_build_object('view', v.view::text),
        date_part('epoch', now() - coalesce(v.refreshed_at, v.registered_at))
    from cache.views as v
    union all
    select 'view_last_refresh_seconds', jsonb_build_object('view', v.view::text),
        date_part('epoch', v.last_duration)
    from cache.views as v where v.last_duration is not null
    union all
    select 'view_pending_changes', jsonb_build_object('view', v.view::text),
        (cache._view_changes(v.view) - v.seen_changes)::double precision
    from cache.views as v;
end
$$;

COMMENT ON FUNCTION cache.stats(stale_after interval) IS 'The cache''s figures as (metric, labels, value) rows: size, hit ratios, invalidations, alerts.';

CREATE FUNCTION cache.track(view regclass, source regclass) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_kind "char";
    v_foid oid;
begin
    if track.view is null or track.source is null then
        raise exception 'view and source must not be null' using errcode = '22004';
    end if;
    if not exists (select from cache.views as v where v.view = track.view) then
        raise exception 'view % is not registered', track.view using errcode = '42704',
            hint = 'Call cache.register_view first.';
    end if;
    if current_setting('track_counts') <> 'on' then
        raise exception 'track_counts is off: changes of % would not be counted', track.source
            using errcode = '55000', hint = 'Turn track_counts on (the default).';
    end if;
    select c.relkind into v_kind from pg_catalog.pg_class as c where c.oid = track.source;
    if v_kind is null or v_kind not in ('r', 'p') then
        raise exception 'source must be a table (% is not)', track.source
            using errcode = '22023';
    end if;
    -- The caller's own right (inside this function current_user is andal's owner): tracking
    -- puts a trigger on the table, which needs the TRIGGER privilege on it.
    if not pg_catalog.has_table_privilege(queue._caller(), track.source, 'TRIGGER') then
        raise exception 'role % may not create triggers on %', queue._caller(), track.source
            using errcode = '42501',
            hint = 'Track the table as a role with the TRIGGER privilege on it.';
    end if;
    select t.tgfoid into v_foid from pg_catalog.pg_trigger as t
    where t.tgrelid = track.source and t.tgname = 'andal_track_truncate';
    if found and v_foid <> 'cache._track_changes()'::regprocedure then
        raise exception 'table % has a trigger andal_track_truncate that andal did not make',
            track.source
            using errcode = '42710',
            hint = 'Rename that trigger; andal manages only its own.';
    end if;
    insert into cache.view_sources as s (view, source) values (track.view, track.source)
    on conflict do nothing;
    if v_foid is null then
        execute format(
            'create trigger andal_track_truncate after truncate on %s for each statement'
            ' execute function cache._track_changes()',
            track.source::text);
    end if;
end
$$;

COMMENT ON FUNCTION cache.track(view regclass, source regclass) IS 'Count the changes of a source table toward the refresh of a registered view.';

CREATE FUNCTION cache.ttl_for(key text) RETURNS interval
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_mean double precision;
    v_changed timestamptz;
begin
    perform cache._primary_only('cache.ttl_for');
    perform cache._check_key(ttl_for.key);
    select e.mean_interval, e.changed_at into v_mean, v_changed
    from cache.entries as e where e.key = ttl_for.key;
    return cache._adaptive_ttl(v_mean, v_changed);
end
$$;

COMMENT ON FUNCTION cache.ttl_for(key text) IS 'The adaptive TTL a put of this key without ttl would get now.';

CREATE FUNCTION cache.unregister_view(view regclass) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_source regclass;
begin
    if unregister_view.view is null then
        raise exception 'view must not be null' using errcode = '22004';
    end if;
    if not exists (select from cache.views as v where v.view = unregister_view.view) then
        raise exception 'view % is not registered', unregister_view.view using errcode = '42704';
    end if;
    for v_source in
        select s.source from cache.view_sources as s where s.view = unregister_view.view
    loop
        perform cache.untrack(unregister_view.view, v_source);
    end loop;
    delete from cache.views as v where v.view = unregister_view.view;
end
$$;

COMMENT ON FUNCTION cache.unregister_view(view regclass) IS 'Forget a registered view (and the tracking of sources no other view needs).';

CREATE FUNCTION cache.untrack(view regclass, source regclass) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_schema name;
    v_table name;
begin
    if untrack.view is null or untrack.source is null then
        raise exception 'view and source must not be null' using errcode = '22004';
    end if;
    delete from cache.view_sources as s
    where s.view = untrack.view and s.source = untrack.source;
    if not found then
        raise exception '% does not track %', untrack.view, untrack.source
            using errcode = '42704';
    end if;
    if not exists (select from cache.view_sources as s where s.source = untrack.source) then
        -- Only andal's own trigger (by its function), and only while the table exists (a
        -- dropped table took its triggers with it).
        select n.nspname, c.relname into v_schema, v_table
        from pg_catalog.pg_trigger as t
        join pg_catalog.pg_class as c on c.oid = t.tgrelid
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        where t.tgrelid = untrack.source and t.tgname = 'andal_track_truncate'
          and t.tgfoid = 'cache._track_changes()'::regprocedure;
        if found then
            execute format('drop trigger andal_track_truncate on %I.%I', v_schema, v_table);
        end if;
        delete from cache.source_changes as c where c.source = untrack.source::oid;
    end if;
end
$$;

COMMENT ON FUNCTION cache.untrack(view regclass, source regclass) IS 'Stop counting a source table toward a view.';

CREATE FUNCTION cache.validate(keys text[], versions bigint[], checksums text[] DEFAULT NULL::text[], loaded jsonb[] DEFAULT NULL::jsonb[]) RETURNS TABLE(key text, version bigint, checksum text, stale boolean, repaired boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_n int;
    v_r record;
    v_stale boolean;
begin
    perform cache._primary_only('cache.validate');
    if validate.keys is null or validate.versions is null then
        raise exception 'keys and versions must not be null' using errcode = '22004';
    end if;
    v_n := cardinality(validate.keys);
    if v_n > 10000 then
        raise exception 'keys must hold at most 10000 keys (got %)', v_n using errcode = '22023';
    end if;
    if cardinality(validate.versions) <> v_n
        or (validate.checksums is not null and cardinality(validate.checksums) <> v_n)
        or (validate.loaded is not null and cardinality(validate.loaded) <> v_n) then
        raise exception 'keys, versions, checksums and loaded must have the same length'
            using errcode = '22023';
    end if;
    if array_position(validate.versions, null) is not null then
        raise exception 'versions must not contain null' using errcode = '22004';
    end if;

    for v_r in
        select k.key as k_key, k.ver, validate.checksums[k.n] as cs, validate.loaded[k.n] as val,
            e.key as e_key, e.version as e_version, e.checksum as e_checksum, e.value is null as e_empty,
            e.stale or coalesce(e.expires_at <= now(), false) as e_stale
        from unnest(validate.keys, validate.versions) with ordinality as k (key, ver, n)
        left join cache.entries as e on e.key = k.key
        order by k.n
    loop
        perform cache._check_key(v_r.k_key, 'keys element');
        if v_r.e_key is null then
            if v_r.ver <> 0 then
                return query select v_r.k_key, 0::bigint, null::text, true, false;
            end if;
            continue;
        end if;
        v_stale := v_r.e_stale or v_r.e_empty;
        if v_r.val is not null and not v_stale
            and md5(v_r.val::text) is distinct from v_r.e_checksum then
            return query select v_r.k_key,
                cache._apply(v_r.k_key, 'invalidate', null, null, 'read-repair'),
                v_r.e_checksum, true, true;
        elsif v_r.e_version <> v_r.ver or v_stale
            or (v_r.cs is not null and v_r.cs is distinct from v_r.e_checksum) then
            return query select v_r.k_key, v_r.e_version, v_r.e_checksum, v_stale, false;
        end if;
    end loop;
end
$$;

COMMENT ON FUNCTION cache.validate(keys text[], versions bigint[], checksums text[], loaded jsonb[]) IS 'Batched read-repair: the keys whose version or checksum differs (mismatches against loaded values are invalidated).';

CREATE FUNCTION queue._add_error(errors jsonb, entry jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when jsonb_array_length(coalesce(errors, '[]')) < 25
        then coalesce(errors, '[]') || jsonb_build_array(entry)
        else (select jsonb_agg(e.value order by e.n)
            from jsonb_array_elements(errors) with ordinality as e (value, n)
            where e.n > jsonb_array_length(errors) - 24) || jsonb_build_array(entry) end
$$;

CREATE TABLE queue.queues (
    queue text NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    lease interval DEFAULT '00:01:00'::interval NOT NULL,
    backoff text DEFAULT 'linear'::text NOT NULL,
    backoff_base interval DEFAULT '00:00:05'::interval NOT NULL,
    backoff_cap interval DEFAULT '01:00:00'::interval NOT NULL,
    jitter real DEFAULT 0 NOT NULL,
    notify boolean DEFAULT true NOT NULL,
    payload_limit integer DEFAULT 1048576 NOT NULL,
    keep_results boolean DEFAULT false NOT NULL,
    cache_policy text DEFAULT 'invalidate'::text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    history_retention interval,
    timeout interval,
    results_retention interval DEFAULT '7 days'::interval NOT NULL,
    dead_retention interval DEFAULT '30 days'::interval NOT NULL,
    CONSTRAINT queues_backoff_base_check CHECK ((backoff_base >= '00:00:00'::interval)),
    CONSTRAINT queues_backoff_cap_check CHECK ((backoff_cap >= '00:00:00'::interval)),
    CONSTRAINT queues_backoff_check CHECK ((backoff = ANY (ARRAY['linear'::text, 'exponential'::text]))),
    CONSTRAINT queues_cache_policy_check CHECK ((cache_policy = ANY (ARRAY['invalidate'::text, 'rewrite'::text, 'none'::text]))),
    CONSTRAINT queues_dead_retention_check CHECK ((dead_retention > '00:00:00'::interval)),
    CONSTRAINT queues_history_retention_check CHECK ((history_retention > '00:00:00'::interval)),
    CONSTRAINT queues_jitter_check CHECK (((jitter >= (0)::double precision) AND (jitter <= (1)::double precision))),
    CONSTRAINT queues_lease_check CHECK ((lease > '00:00:00'::interval)),
    CONSTRAINT queues_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT queues_payload_limit_check CHECK ((payload_limit > 0)),
    CONSTRAINT queues_results_retention_check CHECK ((results_retention > '00:00:00'::interval)),
    CONSTRAINT queues_timeout_check CHECK ((timeout > '00:00:00'::interval))
);

CREATE FUNCTION queue._backoff(cfg queue.queues, attempt integer) RETURNS interval
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_delay interval;
    v_secs numeric;
begin
    -- In seconds, capped before it becomes an interval: base * 2^40 (or * attempt) of a
    -- large base would overflow the interval range.
    if cfg.backoff = 'exponential' then
        v_secs := extract(epoch from cfg.backoff_base)
            * power(2::numeric, least(greatest(attempt, 1) - 1, 40));
    else
        v_secs := extract(epoch from cfg.backoff_base) * greatest(attempt, 1);
    end if;
    v_delay := case when v_secs >= extract(epoch from cfg.backoff_cap) then cfg.backoff_cap
        else make_interval(secs => v_secs::double precision) end;
    if cfg.jitter > 0 then
        v_delay := v_delay * (1 - cfg.jitter * random());
    end if;
    return v_delay;
end
$$;

CREATE FUNCTION queue._bound_error(error text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._bury(job_id bigint, reason text, last_error text, errors jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_queue text;
    v_watched boolean;
    -- the time of the write, the clock claims use (never the transaction's start)
    v_now timestamptz := clock_timestamp();
    v_workflow boolean;
    v_has_parents boolean;
begin
    with gone as (
        delete from queue.jobs as j where j.id = _bury.job_id
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.enqueued_at, j.dedup_key, j.cache_key, j.claimed_at, j.worker, j.watched,
            j.workflow, j.has_parents
    ),
    dead as (
        insert into queue.dead_letters as d (
            job_id, queue, category, priority, payload, attempt, max_attempts, enqueued_at,
            died_at, dedup_key, reason, last_error, errors, cache_key
        )
        select g.id, g.queue, g.category, g.priority, g.payload, g.attempt, g.max_attempts,
            g.enqueued_at, v_now, g.dedup_key, _bury.reason, _bury.last_error, _bury.errors,
            g.cache_key
        from gone as g
    ),
    kept as (
        -- the queue keeps history: the finished job goes there too
        insert into queue.history (
            job_id, queue, category, priority, state, payload, attempt, max_attempts,
            enqueued_at, started_at, finished_at, worker, errors, keep_until
        )
        select g.id, g.queue, g.category, g.priority,
            queue._ended_state(_bury.reason), g.payload,
            g.attempt, g.max_attempts, g.enqueued_at, g.claimed_at, v_now, g.worker,
            _bury.errors, v_now + q.history_retention
        from gone as g
        join queue.queues as q on q.queue = g.queue and q.history_retention is not null
    )
    select g.queue, g.watched, g.workflow, g.has_parents
    into v_queue, v_watched, v_workflow, v_has_parents
    from gone as g;
    perform queue._notify('andal_ops',
        json_build_object('event', 'dead', 'job_id', _bury.job_id, 'queue', v_queue,
            'reason', _bury.reason)::text,
        '{"event":"dead"}');
    delete from queue.watches as w where w.job_id = _bury.job_id;  -- queue.watch's row
    if v_watched or found then
        perform queue._notify('andal_done', _bury.job_id::text);
    end if;
    if v_workflow or v_has_parents then  -- children or parents (queue._workflow_ended)
        perform queue._workflow_ended(case when v_workflow then array[_bury.job_id] end,
            case when v_has_parents then array[_bury.job_id] end, _bury.reason);
    end if;
end
$$;

CREATE FUNCTION queue._caller() RETURNS name
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select coalesce(nullif(current_setting('role'), 'none'), session_user)::name $$;

CREATE FUNCTION queue._candidates(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) RETURNS TABLE(id bigint, category text, priority integer, available_at timestamp with time zone)
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    AS $$
#variable_conflict use_column
declare
    v_best bigint[];
    v_mixed boolean;
    v_head record;
begin
    -- Only gated jobs ready (every queue or one queue): their best `lim` from the head of
    -- the gated index, locked exactly (queue._gated_head), when it decides.
    if queues is null or cardinality(queues) = 1 then
        v_head := queue._gated_head(queues, lim, exclude_categories, exclude_ids);
        if v_head.ids is not null then
            return query
            select h.id, h.category, h.priority, h.available_at
            from unnest(v_head.ids, v_head.categories, v_head.priorities,
                v_head.availabilities) as h (id, category, priority, available_at);
            return;
        end if;
    end if;
    -- Each probe follows its claim index's order and reads one index entry (an EXISTS
    -- drops the ORDER BY and may be planned as a sequential scan).
    if cardinality(exclude_categories) > 0 then
        -- the gated scan reads one index per category: it may over-lock (no probe walks
        -- past the backlog of the categories left out)
        v_mixed := true;
    elsif queues is null then
        v_mixed := (
            select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null and (
            select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (exclude_categories)
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null;
    elsif cardinality(queues) = 1 then
        v_mixed := (
            select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null and (
            select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is not null and j.available_at <= now()
              and j.category <> all (exclude_categories)
            order by j.priority desc, j.available_at, j.id limit 1
        ) is not null;
    else
        v_mixed := true;
    end if;
    if not v_mixed then
        return query
        select s.id, s.category, s.priority, s.available_at
        from queue._scan(queues, lim, exclude_categories, exclude_ids) as s;
        return;
    end if;
    begin
        select array_agg(s.id) into v_best
        from queue._scan(queues, lim, exclude_categories, exclude_ids) as s;
        raise sqlstate 'AN900';  -- roll the subtransaction back: its row locks go with it
    exception when sqlstate 'AN900' then
        null;
    end;
    return query
    select j.id, j.category, j.priority, j.available_at from queue.jobs as j
    where j.id = any (v_best) and j.status = 'pending' and j.available_at <= now()
    order by j.priority desc, j.available_at, j.id
    for update skip locked;
end
$$;

COMMENT ON FUNCTION queue._candidates(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) IS 'Private: queue._scan holding locks on the returned rows only.';

CREATE FUNCTION queue._category_id(category_name text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
declare
    v_id bigint;
begin
    select c.id into v_id from queue.categories as c where c.category = category_name;
    if v_id is null then
        insert into queue.categories as c (category) values (category_name)
        on conflict (category) do nothing;
        select c.id into v_id from queue.categories as c where c.category = category_name;
    end if;
    return v_id;
end
$$;

CREATE FUNCTION queue._check_fence(job_id bigint, token uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
declare
    v_now timestamptz := queue._lease_clock();
begin
    if job_id is null or token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    -- by primary key and token, as complete (a token is set only while a job runs)
    perform from queue.jobs as j
    where j.id = _check_fence.job_id and j.token = _check_fence.token
      and j.lease_expires_at > v_now
    for share;
    if not found then
        perform queue._lease_lost(_check_fence.job_id, _check_fence.token);
    end if;
end
$$;

CREATE FUNCTION queue._check_interval(value interval, argument text, strict_positive boolean DEFAULT false, required boolean DEFAULT true, bound text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_json(value jsonb, argument text, bound bigint, over text, hint text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_name(value text, argument text, required boolean DEFAULT true, max_length integer DEFAULT 128) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_names(names text[], argument text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_payload(payload jsonb, argument text, payload_limit integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_priority(priority integer) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_result(result jsonb, argument text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._check_trace_context(trace_context jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_bytes bigint;
begin
    if jsonb_typeof(trace_context) <> 'object' then
        raise exception 'trace_context must be a JSON object, not %', jsonb_typeof(trace_context)
            using errcode = '22023';
    end if;
    -- the values' types first: a carrier of strings only prints as at most 6 times its
    -- stored size (escapes), where numbers could print as gigabytes
    if exists (
        select from jsonb_each(trace_context) as e where jsonb_typeof(e.value) <> 'string'
    ) then
        raise exception 'trace_context values must be strings (a propagator''s carrier)'
            using errcode = '22023';
    end if;
    v_bytes := octet_length(trace_context::text);
    if v_bytes > 4096 then
        raise exception 'trace_context is % bytes, over the limit of 4096', v_bytes
            using errcode = '22023';
    end if;
end
$$;

CREATE FUNCTION queue._claim(worker text, queues text[], batch integer, lease interval) RETURNS SETOF queue.claimed
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
    v_name text;
    v_now timestamptz := queue._lease_clock();
begin
    -- Validation inline, in plain expressions (no query): this is the hot path.
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.claim');
    end if;
    if _claim.worker is null or length(_claim.worker) not between 1 and 128 then
        perform queue._check_name(_claim.worker, 'worker');
    end if;
    if _claim.batch is null or _claim.batch < 1 or _claim.batch > 1000 then
        raise exception 'batch must be between 1 and 1000 (got %)', _claim.batch
            using errcode = '22023';
    end if;
    if _claim.lease is not null then
        perform queue._check_interval(_claim.lease, 'lease', true, false, 'lease');
    end if;
    if _claim.queues is not null then
        foreach v_name in array _claim.queues loop
            if v_name is null or length(v_name) not between 1 and 128 then
                raise exception 'queues must hold queue names (1 to 128 characters, no nulls)'
                    using errcode = '22023';
            end if;
        end loop;
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.claim must run at READ COMMITTED isolation (not %)',
            current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'The category gate recounts running jobs after taking its lock.';
    end if;

    -- A schedule of the claimed queues is due: fire its ticks first, so their jobs can be
    -- claimed now (one index probe when none is due).
    if _claim.queues is null then
        if (select s.next_at from queue.schedules as s
            where s.task is null and s.next_at <= now()
            order by s.next_at limit 1) is not null then
            perform queue._fire_due(null, 10, 10);
        end if;
    elsif (select s.next_at from queue.schedules as s
           where s.task is null and s.queue = any (_claim.queues) and s.next_at <= now()
           limit 1) is not null then
        perform queue._fire_due(_claim.queues, 10, 10);
    end if;

    if _claim.queues is null or cardinality(_claim.queues) = 1 then
        return query select * from queue._claim_direct(
            _claim.worker, _claim.queues[1], _claim.batch, _claim.lease, v_now);
        if found then
            return;
        end if;
    end if;
    return query select * from queue._claim_general(
        _claim.worker, _claim.queues, _claim.batch, _claim.lease, v_now);
end
$$;

CREATE FUNCTION queue._claim_direct(worker text, queue_name text, batch integer, lease interval, v_now timestamp with time zone) RETURNS SETOF queue.claimed
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if _claim_direct.queue_name is null then
        return query
        with claimed as (
            update queue.jobs as j
            set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
                worker = _claim_direct.worker, claimed_at = v_now,
                lease_expires_at = least(v_now + coalesce(
                    _claim_direct.lease,
                    (select q.lease from queue.queues as q where q.queue = j.queue),
                    queue._lease_default()), v_now + j.timeout)
            where j.id = any (array(
                    select c.id from queue.jobs as c
                    where c.status = 'pending' and c.category is null
                      and c.available_at <= now()
                    order by c.priority desc, c.available_at, c.id
                    limit _claim_direct.batch
                    for update skip locked))
              and (select x.lease_expires_at from queue.jobs as x
                   where x.status = 'running' and x.lease_expires_at <= v_now
                   order by x.lease_expires_at limit 1) is null
              and (select g.id from queue.jobs as g
                   where g.status = 'pending' and g.category is not null
                     and g.available_at <= now()
                   order by g.priority desc, g.available_at, g.id limit 1) is null
              and (select p.queue from queue.queues as p where p.paused limit 1) is null
            returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt,
                j.max_attempts, j.token, j.lease_expires_at, j.enqueued_at, j.cache_key,
                j.cache_version, j.available_at, v_now + j.timeout as deadline
        )
        select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
            c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
        from claimed as c
        order by c.priority desc, c.available_at, c.id;
        return;
    end if;
    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = _claim_direct.worker, claimed_at = v_now,
            lease_expires_at = least(v_now + coalesce(
                _claim_direct.lease,
                (select q.lease from queue.queues as q where q.queue = _claim_direct.queue_name),
                queue._lease_default()), v_now + j.timeout)
        where j.id = any (array(
                select c.id from queue.jobs as c
                where c.queue = _claim_direct.queue_name
                  and c.queue >= _claim_direct.queue_name and c.queue <= _claim_direct.queue_name
                  and c.status = 'pending' and c.category is null
                  and c.available_at <= now()
                order by c.priority desc, c.available_at, c.id
                limit _claim_direct.batch
                for update skip locked))
          and j.queue = _claim_direct.queue_name
          and (select x.lease_expires_at from queue.jobs as x
               where x.queue = _claim_direct.queue_name
                 and x.status = 'running' and x.lease_expires_at <= v_now
               order by x.lease_expires_at limit 1) is null
          and (select g.id from queue.jobs as g
               where g.queue = _claim_direct.queue_name
                 and g.queue >= _claim_direct.queue_name and g.queue <= _claim_direct.queue_name
                 and g.status = 'pending' and g.category is not null
                 and g.available_at <= now()
               order by g.priority desc, g.available_at, g.id limit 1) is null
          and (select p.queue from queue.queues as p
               where p.paused and p.queue = _claim_direct.queue_name) is null
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt,
            j.max_attempts, j.token, j.lease_expires_at, j.enqueued_at, j.cache_key,
            j.cache_version, j.available_at, v_now + j.timeout as deadline
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
end
$$;

CREATE FUNCTION queue._claim_general(worker text, queues text[], batch integer, lease interval, v_now timestamp with time zone) RETURNS SETOF queue.claimed
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_exclude text[];
    v_ids bigint[];
    v_cats text[];
    v_take bigint[];
begin
    -- Paused queues are left out: a claim of every queue becomes one of the queues not
    -- paused whose ready jobs can be among its best (queue._unpaused_queues; expired leases
    -- of the other queues are then taken back by their own claims or queue.maintain).
    if (select p.queue from queue.queues as p where p.paused limit 1) is not null then
        queues := queue._unpaused_queues(_claim_general.queues, _claim_general.batch);
        if cardinality(_claim_general.queues) = 0 then
            return;
        end if;
    end if;

    -- Take back expired leases first (an index probe when there are none).
    if _claim_general.queues is null then
        if (select x.lease_expires_at from queue.jobs as x
            where x.status = 'running' and x.lease_expires_at <= v_now
            order by x.lease_expires_at limit 1) is not null then
            perform queue._reap(100);
        end if;
    elsif exists (
        select from unnest(_claim_general.queues) as q (name)
        where (select x.lease_expires_at from queue.jobs as x
               where x.queue = q.name
                 and x.status = 'running' and x.lease_expires_at <= v_now
               order by x.lease_expires_at limit 1) is not null
    ) then
        perform queue._reap(100, _claim_general.queues);
    end if;

    -- Categories that cannot take a job now: paused, or as many live slots as their limit
    -- (a slot whose lease expired is not live, whichever queue its job is in).
    v_exclude := queue._full_categories(v_now);
    select  -- the best `batch` candidates, locked; those with a category gated
        array_agg(c.id order by c.priority desc, c.available_at, c.id),
        array_agg(c.category order by c.priority desc, c.available_at, c.id)
    into v_ids, v_cats
    from queue._candidates(_claim_general.queues, _claim_general.batch, v_exclude, '{}') as c;
    if v_ids is null then
        return;
    end if;
    if cardinality(array_remove(v_cats, null)) = 0 then
        v_take := v_ids;
    else
        v_take := queue._gate(_claim_general.worker, _claim_general.queues,
            _claim_general.batch, v_ids, v_cats, v_exclude, v_now);
    end if;
    return query select * from queue._lease_taken(
        _claim_general.worker, v_take, _claim_general.lease, v_now);
end
$$;

CREATE FUNCTION queue._complete_delete(job_ids bigint[], tokens uuid[], results_in jsonb[], now timestamp with time zone, OUT ids bigint[], OUT toks uuid[], OUT queues text[], OUT categories text[], OUT run_ms double precision[], OUT run_buckets integer[], OUT wait_buckets integer[], OUT span int8range, OUT settle boolean, OUT cache_keys text[], OUT results jsonb[], OUT history jsonb, OUT watched bigint[], OUT flow bigint[], OUT flow_results jsonb[], OUT flow_children bigint[], OUT flow_only bigint[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
begin
    with input as materialized (
        select distinct on (i.id, i.tok) i.id, i.tok, i.n
        from unnest(_complete_delete.job_ids, _complete_delete.tokens) with ordinality
            as i (id, tok, n)
        order by i.id, i.tok, i.n
    ),
    gone as (
        delete from queue.jobs as j using input as i
        where j.id = i.id and j.token = i.tok
          and j.lease_expires_at > _complete_delete.now and j.abort_requested_at is null
        returning j.id, j.token, j.queue, j.category, j.cache_key, i.n, j.priority, j.payload,
            j.attempt, j.max_attempts, j.enqueued_at, j.claimed_at, j.worker, j.errors,
            j.watched, j.workflow, j.has_parents, j.only_child,
            _complete_delete.results_in[i.n] as result,
            date_part('epoch', _complete_delete.now - j.claimed_at) * 1000 as run_ms,
            width_bucket(date_part('epoch', _complete_delete.now - j.claimed_at) * 1000,
                queue._hist_bounds())
            + 1 as rb,
            width_bucket(date_part('epoch', j.claimed_at - j.available_at) * 1000,
                queue._hist_bounds())
            + 1 as wb
    ),
    kept as (
        -- the queues that keep results are read once (usually none), not once per job; in
        -- key order, so on an index
        insert into queue.results (job_id, queue, result, completed_at)
        select g.id, g.queue, queue._check_result(g.result, format('results[%s]', g.n)),
            _complete_delete.now
        from gone as g
        where g.queue = any (array(
            select q.queue from queue.queues as q where q.keep_results order by q.queue))
    )
    select array_agg(g.id), array_agg(g.token), array_agg(g.queue), array_agg(g.category),
        array_agg(g.run_ms), array_agg(g.rb), array_agg(g.wb),
        int8range(min(g.id), max(g.id), '[]'),
        bool_or(g.category is not null or g.cache_key is not null), array_agg(g.cache_key),
        array_agg(g.result),
        -- (usually none: the queues that keep history are read once)
        jsonb_agg(jsonb_build_object(
            'job_id', g.id, 'queue', g.queue, 'category', g.category, 'priority', g.priority,
            'payload', g.payload, 'attempt', g.attempt, 'max_attempts', g.max_attempts,
            'enqueued_at', g.enqueued_at, 'started_at', g.claimed_at, 'worker', g.worker,
            'result', queue._check_result(g.result, format('results[%s]', g.n)),
            'errors', g.errors))
        filter (where g.queue = any (array(
            select q.queue from queue.queues as q where q.history_retention is not null
            order by q.queue))),
        array_agg(g.id) filter (where g.watched), array_agg(g.id) filter (where g.workflow),
        array_agg(g.result) filter (where g.workflow),
        array_agg(g.id) filter (where g.has_parents),
        array_agg(g.only_child) filter (where g.workflow)
    into ids, toks, queues, categories, run_ms, run_buckets, wait_buckets, span, settle,
        cache_keys, results, history, watched, flow, flow_results, flow_children, flow_only
    from gone as g;
end
$$;

CREATE FUNCTION queue._complete_one(job_id bigint, token uuid, result jsonb) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform queue.complete(job_id => _complete_one.job_id, token => _complete_one.token,
        result => _complete_one.result);
    return true;
exception
    when sqlstate 'AN001' then
        return false;
    when sqlstate '54000' then
        perform queue._check_result(_complete_one.result, 'results[1]');
        raise;
end
$$;

CREATE FUNCTION queue._completions_keep() RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select interval '1 hour' $$;

COMMENT ON FUNCTION queue._completions_keep() IS 'Private: how long queue.job answers for a completed job of a queue without history.';

CREATE FUNCTION queue._config(queue_name text) RETURNS queue.queues
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
declare
    v_cfg queue.queues;
begin
    select q.* into v_cfg from queue.queues as q where q.queue = queue_name;
    if not found then
        insert into queue.queues as q (queue) values (queue_name)
        on conflict (queue) do nothing;
        select q.* into v_cfg from queue.queues as q where q.queue = queue_name;
    end if;
    return v_cfg;
end
$$;

CREATE FUNCTION queue._configure_queue(queue text, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text, timeout interval, results_retention interval, dead_retention interval) RETURNS SETOF queue.queues
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(_configure_queue.queue, 'queue');
    if _configure_queue.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', _configure_queue.max_attempts
            using errcode = '22023';
    end if;
    perform queue._check_interval(_configure_queue.lease, 'lease', true, false, 'lease');
    -- timeout '0' removes the queue's timeout; any other must have a positive effect (one of
    -- none, such as '1 mon -31 days' in December, would time every attempt out at its claim)
    perform queue._check_interval(_configure_queue.timeout, 'timeout',
        coalesce(_configure_queue.timeout <> interval '0', false), false, 'lease');
    perform queue._check_interval(_configure_queue.results_retention, 'results_retention', true,
        false);
    perform queue._check_interval(_configure_queue.dead_retention, 'dead_retention', true,
        false);
    perform queue._check_interval(_configure_queue.backoff_base, 'backoff_base', false, false,
        'delay');
    perform queue._check_interval(_configure_queue.backoff_cap, 'backoff_cap', false, false,
        'delay');
    if _configure_queue.backoff not in ('linear', 'exponential') then
        raise exception 'backoff must be linear or exponential (got %)', _configure_queue.backoff
            using errcode = '22023';
    end if;
    if _configure_queue.jitter < 0 or _configure_queue.jitter > 1 then
        raise exception 'jitter must be between 0 and 1 (got %)', _configure_queue.jitter
            using errcode = '22023';
    end if;
    if _configure_queue.payload_limit < 1 then
        raise exception 'payload_limit must be at least 1 byte (got %)',
            _configure_queue.payload_limit using errcode = '22023';
    end if;
    if _configure_queue.cache_policy not in ('invalidate', 'rewrite', 'none') then
        raise exception 'cache_policy must be invalidate, rewrite or none (got %)',
            _configure_queue.cache_policy using errcode = '22023';
    end if;
    -- queue.maintain() may forget a queue row equal to the defaults between _config and the
    -- update: then the update finds nothing, and the row is made again
    loop
    perform queue._config(_configure_queue.queue);
    return query
    update queue.queues as q set
        max_attempts = coalesce(_configure_queue.max_attempts, q.max_attempts),
        lease = coalesce(_configure_queue.lease, q.lease),
        backoff = coalesce(_configure_queue.backoff, q.backoff),
        backoff_base = coalesce(_configure_queue.backoff_base, q.backoff_base),
        backoff_cap = coalesce(_configure_queue.backoff_cap, q.backoff_cap),
        jitter = coalesce(_configure_queue.jitter, q.jitter),
        notify = coalesce(_configure_queue.notify, q.notify),
        payload_limit = coalesce(_configure_queue.payload_limit, q.payload_limit),
        keep_results = coalesce(_configure_queue.keep_results, q.keep_results),
        cache_policy = coalesce(_configure_queue.cache_policy, q.cache_policy),
        timeout = case
            when _configure_queue.timeout is null then q.timeout
            when _configure_queue.timeout = interval '0' then null
            else _configure_queue.timeout
        end,
        results_retention = coalesce(_configure_queue.results_retention, q.results_retention),
        dead_retention = coalesce(_configure_queue.dead_retention, q.dead_retention),
        updated_at = now()
    where q.queue = _configure_queue.queue
    returning q.*;
    exit when found;
    end loop;
end
$$;

CREATE FUNCTION queue._count_completed(queues text[], categories text[], run_ms double precision[], run_buckets integer[], wait_buckets integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, run_count, run_ms, run_hist, wait_hist
    )
    select date_trunc('minute', now()), pg_backend_pid(), g.q, coalesce(g.c, ''),
        count(*), count(*), sum(g.ms),
        array[
            count(*) filter (where g.rb = 1), count(*) filter (where g.rb = 2),
            count(*) filter (where g.rb = 3), count(*) filter (where g.rb = 4),
            count(*) filter (where g.rb = 5), count(*) filter (where g.rb = 6),
            count(*) filter (where g.rb = 7), count(*) filter (where g.rb = 8),
            count(*) filter (where g.rb = 9), count(*) filter (where g.rb = 10),
            count(*) filter (where g.rb = 11), count(*) filter (where g.rb = 12),
            count(*) filter (where g.rb = 13), count(*) filter (where g.rb = 14),
            count(*) filter (where g.rb = 15), count(*) filter (where g.rb = 16)],
        array[
            count(*) filter (where g.wb = 1), count(*) filter (where g.wb = 2),
            count(*) filter (where g.wb = 3), count(*) filter (where g.wb = 4),
            count(*) filter (where g.wb = 5), count(*) filter (where g.wb = 6),
            count(*) filter (where g.wb = 7), count(*) filter (where g.wb = 8),
            count(*) filter (where g.wb = 9), count(*) filter (where g.wb = 10),
            count(*) filter (where g.wb = 11), count(*) filter (where g.wb = 12),
            count(*) filter (where g.wb = 13), count(*) filter (where g.wb = 14),
            count(*) filter (where g.wb = 15), count(*) filter (where g.wb = 16)]
    from unnest(_count_completed.queues, _count_completed.categories, _count_completed.run_ms,
        _count_completed.run_buckets, _count_completed.wait_buckets) as g (q, c, ms, rb, wb)
    group by g.q, coalesce(g.c, '')
    on conflict (minute, backend, queue, category) do update
    set completed = s.completed + excluded.completed,
        run_count = s.run_count + excluded.run_count,
        run_ms = s.run_ms + excluded.run_ms,
        run_hist = array[
            s.run_hist[1] + excluded.run_hist[1], s.run_hist[2] + excluded.run_hist[2],
            s.run_hist[3] + excluded.run_hist[3], s.run_hist[4] + excluded.run_hist[4],
            s.run_hist[5] + excluded.run_hist[5], s.run_hist[6] + excluded.run_hist[6],
            s.run_hist[7] + excluded.run_hist[7], s.run_hist[8] + excluded.run_hist[8],
            s.run_hist[9] + excluded.run_hist[9], s.run_hist[10] + excluded.run_hist[10],
            s.run_hist[11] + excluded.run_hist[11], s.run_hist[12] + excluded.run_hist[12],
            s.run_hist[13] + excluded.run_hist[13], s.run_hist[14] + excluded.run_hist[14],
            s.run_hist[15] + excluded.run_hist[15], s.run_hist[16] + excluded.run_hist[16]],
        wait_hist = array[
            s.wait_hist[1] + excluded.wait_hist[1], s.wait_hist[2] + excluded.wait_hist[2],
            s.wait_hist[3] + excluded.wait_hist[3], s.wait_hist[4] + excluded.wait_hist[4],
            s.wait_hist[5] + excluded.wait_hist[5], s.wait_hist[6] + excluded.wait_hist[6],
            s.wait_hist[7] + excluded.wait_hist[7], s.wait_hist[8] + excluded.wait_hist[8],
            s.wait_hist[9] + excluded.wait_hist[9], s.wait_hist[10] + excluded.wait_hist[10],
            s.wait_hist[11] + excluded.wait_hist[11], s.wait_hist[12] + excluded.wait_hist[12],
            s.wait_hist[13] + excluded.wait_hist[13], s.wait_hist[14] + excluded.wait_hist[14],
            s.wait_hist[15] + excluded.wait_hist[15], s.wait_hist[16] + excluded.wait_hist[16]];
end
$$;

CREATE FUNCTION queue._cron_field(part text, field text, lo integer, hi integer, names text[] DEFAULT NULL::text[]) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

CREATE FUNCTION queue._cron_matches(minutes integer[], hours integer[], days integer[], months integer[], weekdays integer[], days_restricted boolean, weekdays_restricted boolean, wall timestamp without time zone) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._cron_next(expr text, after timestamp with time zone, tz text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._cron_next_local(minutes integer[], hours integer[], days integer[], months integer[], weekdays integer[], days_restricted boolean, weekdays_restricted boolean, after timestamp without time zone, until timestamp without time zone) RETURNS timestamp without time zone
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._cron_parse(expr text, OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT days_restricted boolean, OUT weekdays_restricted boolean) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._cron_walk_minutes(minutes integer[], hours integer[], days integer[], months integer[], weekdays integer[], days_restricted boolean, weekdays_restricted boolean, hour_any boolean, tz text, after timestamp with time zone, starts timestamp with time zone[], span interval) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._dead_matching(queue_name text, reason_name text, older_than interval, max_rows integer) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_ids bigint[];
begin
    perform queue._check_name(queue_name, 'queue', false);
    perform queue._check_interval(older_than, 'older_than', required => false);
    if max_rows is null then
        raise exception 'max_rows must not be null' using errcode = '22004';
    end if;
    if max_rows < 1 or max_rows > 10000 then
        raise exception 'max_rows must be 1 to 10000 (got %)', max_rows
            using errcode = '22023', hint = 'Call again for the next ones.';
    end if;
    if reason_name is not null and reason_name not in ('exhausted', 'non_retryable', 'cancelled')
    then
        raise exception 'reason must be exhausted, non_retryable or cancelled (got %)',
            reason_name using errcode = '22023';
    end if;
    select array_agg(m.job_id order by m.died_at, m.job_id) into v_ids
    from (
        select d.job_id, d.died_at
        from queue.dead_letters as d
        where (queue_name is null or d.queue = queue_name)
            and (reason_name is null or d.reason = reason_name)
            and (older_than is null or d.died_at < now() - older_than)
        order by d.died_at, d.job_id
        limit max_rows
        for update skip locked
    ) as m;
    return coalesce(v_ids, '{}');
end
$$;

CREATE FUNCTION queue._ended_state(reason text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when reason in ('cancelled', 'parent_failed') then 'cancelled' else 'dead' end
$$;

COMMENT ON FUNCTION queue._ended_state(reason text) IS 'Private: the state (dead, cancelled) of a dead letter from its reason.';

CREATE FUNCTION queue._enqueue(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_id bigint;
    v_inserted boolean := false;
    -- null means the default, as for max_attempts and timeout
    v_priority int := coalesce(_enqueue.priority, 0);
    v_delay interval := coalesce(_enqueue.delay, interval '0');
begin
    v_cfg := queue._enqueue_check(_enqueue.payload, _enqueue.queue, _enqueue.category,
        v_priority, v_delay, _enqueue.max_attempts, _enqueue.dedup_key, _enqueue.cache_key,
        _enqueue.cache_value, _enqueue.timeout, _enqueue.trace_context);
    if _enqueue.category is not null then
        perform queue._category_id(_enqueue.category);
    end if;

    loop
        insert into queue.jobs as j (
            queue, category, priority, payload, max_attempts, available_at, dedup_key,
            cache_key, timeout, trace_context
        ) values (
            _enqueue.queue, _enqueue.category, v_priority, _enqueue.payload,
            coalesce(_enqueue.max_attempts, v_cfg.max_attempts), now() + v_delay,
            _enqueue.dedup_key, _enqueue.cache_key, coalesce(_enqueue.timeout, v_cfg.timeout),
            _enqueue.trace_context
        )
        on conflict (queue, dedup_key) where dedup_key is not null do nothing
        returning j.id into v_id;
        if v_id is not null then
            v_inserted := true;
            exit;
        end if;
        -- A live job holds the key; it may finish between the conflict and this read: retry.
        select j.id into v_id from queue.jobs as j
        where j.queue = _enqueue.queue and j.dedup_key = _enqueue.dedup_key;
        exit when v_id is not null;
    end loop;

    if v_inserted then
        if _enqueue.cache_key is not null then
            perform queue._enqueue_cache(v_id, _enqueue.cache_key, _enqueue.cache_value);
        end if;
        if v_cfg.notify and v_delay <= interval '0' then
            perform queue._notify_ready(_enqueue.queue, true);
        end if;
    end if;
    return v_id;
end
$$;

CREATE FUNCTION queue._enqueue_cache(job_id bigint, cache_key text, cache_value jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_version bigint;
begin
    if _enqueue_cache.cache_value is not null then
        v_version := cache._write_through(_enqueue_cache.cache_key, _enqueue_cache.cache_value);
    else
        v_version := cache._current_version(_enqueue_cache.cache_key);
    end if;
    update queue.jobs as j set cache_version = v_version where j.id = _enqueue_cache.job_id;
end
$$;

CREATE FUNCTION queue._enqueue_check(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb) RETURNS queue.queues
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_cfg queue.queues;
begin
    perform queue._check_name(_enqueue_check.queue, 'queue');
    -- (a helper is called only when it has something to check: a null name or timeout
    -- passes, so does a delay of 0 in effect, as in queue._enqueue_many_check)
    if _enqueue_check.category is not null then
        perform queue._check_name(_enqueue_check.category, 'category', false);
    end if;
    if _enqueue_check.dedup_key is not null then
        perform queue._check_name(_enqueue_check.dedup_key, 'dedup_key', false, 512);
    end if;
    if _enqueue_check.cache_key is not null then
        perform queue._check_name(_enqueue_check.cache_key, 'cache_key', false, 512);
    end if;
    if not (_enqueue_check.delay = interval '0'
            and abs(extract(epoch from _enqueue_check.delay)) < 1e9
            and now() + _enqueue_check.delay = now()) then
        perform queue._check_interval(_enqueue_check.delay, 'delay', bound => 'delay');
    end if;
    if _enqueue_check.priority <> 0 then
        perform queue._check_priority(_enqueue_check.priority);  -- 0 is always allowed
    end if;
    if _enqueue_check.timeout is not null then
        perform queue._check_interval(_enqueue_check.timeout, 'timeout', true, false, 'lease');
    end if;
    if _enqueue_check.max_attempts is not null and _enqueue_check.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', _enqueue_check.max_attempts
            using errcode = '22023';
    end if;
    if _enqueue_check.cache_value is not null and _enqueue_check.cache_key is null then
        raise exception 'cache_value needs a cache_key' using errcode = '22023';
    end if;
    if _enqueue_check.payload is null then
        raise exception 'payload must not be null' using errcode = '22004';
    end if;
    -- A dedup key answers with the live job of another transaction, a cache key reads or
    -- writes the entry others change: both need the newest committed rows, which a
    -- REPEATABLE READ or SERIALIZABLE snapshot hides (it would fail with 40001 on a race).
    if (_enqueue_check.dedup_key is not null or _enqueue_check.cache_key is not null)
        and current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.enqueue with a dedup_key or cache_key must run at READ COMMITTED '
            'isolation (not %)', current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'Enqueue without dedup_key and cache_key, or in a READ COMMITTED transaction.';
    end if;
    if _enqueue_check.trace_context is not null then
        perform queue._check_trace_context(_enqueue_check.trace_context);
    end if;
    -- a cache_value is checked also when a live job already holds the dedup key
    if _enqueue_check.cache_value is not null then
        perform cache._check_value(_enqueue_check.cache_value, 'cache_value');
    end if;
    v_cfg := queue._config(_enqueue_check.queue);
    perform queue._check_payload(_enqueue_check.payload, 'payload', v_cfg.payload_limit);
    return v_cfg;
end
$$;

CREATE FUNCTION queue._enqueue_lean(payload jsonb, queue text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_id bigint;
begin
    if _enqueue_lean.queue is null or length(_enqueue_lean.queue) not between 1 and 128 then
        perform queue._check_name(_enqueue_lean.queue, 'queue');
    end if;
    if _enqueue_lean.payload is null then
        raise exception 'payload must not be null' using errcode = '22004';
    end if;
    select q.* into v_cfg from queue.queues as q where q.queue = _enqueue_lean.queue;
    if not found then
        v_cfg := queue._config(_enqueue_lean.queue);
    end if;
    -- queue._json_size's first step, inline: a small object (stored in at most 1024 bytes)
    -- printing as at most 1000 bytes within the limit passes; anything else is checked whole
    if jsonb_typeof(_enqueue_lean.payload) <> 'object'
        or pg_column_size(_enqueue_lean.payload) > 1024
        or octet_length(_enqueue_lean.payload::text) > least(1000, v_cfg.payload_limit) then
        perform queue._check_payload(_enqueue_lean.payload, 'payload', v_cfg.payload_limit);
    end if;
    insert into queue.jobs as j (queue, payload, max_attempts, available_at, timeout)
    values (
        _enqueue_lean.queue, _enqueue_lean.payload, v_cfg.max_attempts, now(), v_cfg.timeout
    )
    returning j.id into v_id;
    if v_cfg.notify then
        perform queue._notify_ready(_enqueue_lean.queue, true);
    end if;
    return v_id;
end
$$;

CREATE FUNCTION queue._enqueue_many(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[], timeout interval) RETURNS SETOF bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_keyed record;  -- the ids and whether one was inserted (queue._enqueue_many_keyed)
    v_inserted boolean := false;
    -- null means the default, as for max_attempts and timeout
    v_priority int := coalesce(_enqueue_many.priority, 0);
    v_delay interval := coalesce(_enqueue_many.delay, interval '0');
begin
    if queue._enqueue_many_check(_enqueue_many.payloads, _enqueue_many.queue,
            _enqueue_many.category, v_priority, v_delay, _enqueue_many.max_attempts,
            _enqueue_many.dedup_keys, _enqueue_many.timeout) = 0 then
        return;
    end if;
    v_cfg := queue._enqueue_many_check_jobs(_enqueue_many.payloads, _enqueue_many.queue,
        _enqueue_many.dedup_keys);
    if _enqueue_many.category is not null then
        perform queue._category_id(_enqueue_many.category);
    end if;

    if _enqueue_many.dedup_keys is null then
        -- One set-based insert; identity values follow the ordered input.
        return query
        insert into queue.jobs as j (
            queue, category, priority, payload, max_attempts, available_at, timeout
        )
        select _enqueue_many.queue, _enqueue_many.category, v_priority, p.payload,
            coalesce(_enqueue_many.max_attempts, v_cfg.max_attempts), now() + v_delay,
            coalesce(_enqueue_many.timeout, v_cfg.timeout)
        from unnest(_enqueue_many.payloads) with ordinality as p (payload, n)
        order by p.n
        returning j.id;
        v_inserted := true;
    else
        v_keyed := queue._enqueue_many_keyed(_enqueue_many.payloads, _enqueue_many.queue,
            _enqueue_many.category, v_priority, now() + v_delay,
            coalesce(_enqueue_many.max_attempts, v_cfg.max_attempts), _enqueue_many.dedup_keys,
            coalesce(_enqueue_many.timeout, v_cfg.timeout));
        v_inserted := v_keyed.inserted;
        return query select u.id from unnest(v_keyed.ids) with ordinality as u (id, n) order by u.n;
    end if;

    if v_inserted and v_cfg.notify and v_delay <= interval '0' then
        perform queue._notify_ready(_enqueue_many.queue, true);
    end if;
end
$$;

CREATE FUNCTION queue._enqueue_many_check(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[], timeout interval) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if _enqueue_many_check.payloads is null then
        raise exception 'payloads must not be null' using errcode = '22004';
    end if;
    perform queue._check_name(_enqueue_many_check.queue, 'queue');
    -- (a helper is called only when it has something to check: a null category or timeout
    -- passes, so does a delay of 0 in effect, tested as in queue.enqueue)
    if _enqueue_many_check.category is not null then
        perform queue._check_name(_enqueue_many_check.category, 'category', false);
    end if;
    if not (_enqueue_many_check.delay = interval '0'
            and abs(extract(epoch from _enqueue_many_check.delay)) < 1e9
            and now() + _enqueue_many_check.delay = now()) then
        perform queue._check_interval(_enqueue_many_check.delay, 'delay', bound => 'delay');
    end if;
    if _enqueue_many_check.priority <> 0 then
        perform queue._check_priority(_enqueue_many_check.priority);  -- 0 is always allowed
    end if;
    if _enqueue_many_check.timeout is not null then
        perform queue._check_interval(_enqueue_many_check.timeout, 'timeout', true, false,
            'lease');
    end if;
    if _enqueue_many_check.max_attempts is not null and _enqueue_many_check.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)',
            _enqueue_many_check.max_attempts using errcode = '22023';
    end if;
    -- one-dimensional and starting at 1, or elements would be read wrongly or not at all
    if array_ndims(_enqueue_many_check.payloads) > 1
        or array_lower(_enqueue_many_check.payloads, 1) <> 1 then
        raise exception 'payloads must be a one-dimensional array starting at index 1'
            using errcode = '22023';
    end if;
    if array_ndims(_enqueue_many_check.dedup_keys) > 1
        or array_lower(_enqueue_many_check.dedup_keys, 1) <> 1 then
        raise exception 'dedup_keys must be a one-dimensional array starting at index 1'
            using errcode = '22023';
    end if;
    return coalesce(array_length(_enqueue_many_check.payloads, 1), 0);
end
$$;

CREATE FUNCTION queue._enqueue_many_check_jobs(payloads jsonb[], queue text, dedup_keys text[]) RETURNS queue.queues
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_n int := array_length(_enqueue_many_check_jobs.payloads, 1);
    v_cfg queue.queues;
    v_i int;
begin
    if _enqueue_many_check_jobs.dedup_keys is not null
        and coalesce(array_length(_enqueue_many_check_jobs.dedup_keys, 1), 0) <> v_n then
        raise exception 'dedup_keys must have one element per payload (% payloads, % keys)',
            v_n, coalesce(array_length(_enqueue_many_check_jobs.dedup_keys, 1), 0)
            using errcode = '22023';
    end if;
    -- A dedup key answers with the live job of another transaction: it needs the newest
    -- committed rows, which a REPEATABLE READ or SERIALIZABLE snapshot hides (it would fail
    -- with 40001 on a race).
    if _enqueue_many_check_jobs.dedup_keys is not null
        and current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.enqueue_many with dedup_keys must run at READ COMMITTED '
            'isolation (not %)', current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'Enqueue without dedup_keys, or in a READ COMMITTED transaction.';
    end if;
    v_cfg := queue._config(_enqueue_many_check_jobs.queue);
    -- The elements are checked by one statement, not one call per job: it finds the first
    -- position whose payload (or dedup key) breaks a rule, and the checks then raise that
    -- element's error, the one a check of every element in order would raise first.
    select e.n::int into v_i
    from unnest(_enqueue_many_check_jobs.payloads, _enqueue_many_check_jobs.dedup_keys)
        with ordinality as e (payload, key, n)
    where e.payload is null or jsonb_typeof(e.payload) <> 'object'
       -- queue._json_size's first step inline (a small payload printing as at most 1000
       -- bytes within the limit passes); anything else is measured whole at bounded cost
       or (pg_column_size(e.payload) > 1024
           or octet_length(e.payload::text) > least(1000, v_cfg.payload_limit))
       and not queue._json_fits(e.payload, v_cfg.payload_limit)
       or length(e.key) not between 1 and 512
    order by e.n
    limit 1;
    if v_i is not null then
        perform queue._check_payload(_enqueue_many_check_jobs.payloads[v_i],
            format('payloads[%s]', v_i), v_cfg.payload_limit);
        perform queue._check_name(_enqueue_many_check_jobs.dedup_keys[v_i],
            format('dedup_keys[%s]', v_i), false, 512);
    end if;
    return v_cfg;
end
$$;

CREATE FUNCTION queue._enqueue_many_keyed(payloads jsonb[], queue text, category text, priority integer, available_at timestamp with time zone, max_attempts integer, dedup_keys text[], timeout interval, OUT ids bigint[], OUT inserted boolean) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_seq text := pg_get_serial_sequence('queue.jobs', 'id');
    v_id bigint;
    v_i int;
begin
    inserted := false;
    -- Keys are inserted in one canonical order (by key, then position), so two calls whose
    -- keys overlap in different orders wait on each other at most once, never in a cycle (no
    -- deadlock). The ids are drawn first, in input order, so a batch is still claimed in
    -- input order (same availability and priority: by id).
    ids := '{}'::bigint[];
    for v_i in 1 .. cardinality(_enqueue_many_keyed.payloads) loop
        ids := ids || nextval(v_seq);
    end loop;
    for v_i in
        select k.n::int from unnest(_enqueue_many_keyed.dedup_keys) with ordinality as k (key, n)
        order by k.key collate "C" nulls last, k.n
    loop
        loop
            insert into queue.jobs as j (
                id, queue, category, priority, payload, max_attempts, available_at,
                dedup_key, timeout
            ) overriding system value values (
                ids[v_i], _enqueue_many_keyed.queue, _enqueue_many_keyed.category,
                _enqueue_many_keyed.priority, _enqueue_many_keyed.payloads[v_i],
                _enqueue_many_keyed.max_attempts, _enqueue_many_keyed.available_at,
                _enqueue_many_keyed.dedup_keys[v_i], _enqueue_many_keyed.timeout
            )
            on conflict (queue, dedup_key) where dedup_key is not null do nothing
            returning j.id into v_id;
            if v_id is not null then
                inserted := true;
                exit;
            end if;
            select j.id into v_id from queue.jobs as j
            where j.queue = _enqueue_many_keyed.queue
              and j.dedup_key = _enqueue_many_keyed.dedup_keys[v_i];
            exit when v_id is not null;
        end loop;
        ids[v_i] := v_id;
    end loop;
end
$$;

CREATE FUNCTION queue._error_entry(attempt integer, error text, worker text, retry_in interval DEFAULT NULL::interval) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select jsonb_strip_nulls(jsonb_build_object(
        'attempt', attempt, 'error', queue._bound_error(error), 'worker', worker, 'at', now(),
        'retry_in', retry_in::text
    ))
$$;

CREATE FUNCTION queue._fail(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) RETURNS TABLE(status text, reason text, available_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_job record;
    v_cfg queue.queues;
    v_delay interval;
    v_error text;
    v_reason text;
    v_at timestamptz;
begin
    if _fail.job_id is null or _fail.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    if _fail.error is null then
        raise exception 'error must not be null' using errcode = '22004',
            hint = 'Pass the error message (and traceback) of the failed attempt.';
    end if;
    if _fail.retryable is null then
        raise exception 'retryable must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(_fail.retry_in, 'retry_in', false, false, 'delay');
    v_error := queue._bound_error(_fail.error);

    select j.* into v_job from queue.jobs as j where j.id = _fail.job_id for update;
    if v_job.id is null or v_job.status <> 'running' or v_job.token <> _fail.token
        or v_job.lease_expires_at <= queue._lease_clock() then
        perform queue._lease_lost(_fail.job_id, _fail.token);
    end if;
    v_cfg := queue._config(v_job.queue);

    if v_job.abort_requested_at is not null then
        perform queue._bury(v_job.id, 'cancelled', v_error, queue._add_error(v_job.errors,
            queue._error_entry(v_job.attempt, v_error, v_job.worker)));
        perform queue._settle(v_job.id, v_job.queue, v_job.category, 'cancelled',
            v_job.claimed_at, v_job.available_at, v_job.cache_key);
        return query select 'cancelled'::text, 'cancelled'::text, null::timestamptz;
        return;
    end if;
    if not _fail.retryable or queue._out_of_attempts(v_job.attempt, v_job.max_attempts) then
        v_reason := case when _fail.retryable then 'exhausted' else 'non_retryable' end;
        perform queue._bury(v_job.id, v_reason, v_error, queue._add_error(v_job.errors,
            queue._error_entry(v_job.attempt, v_error, v_job.worker)));
        perform queue._settle(v_job.id, v_job.queue, v_job.category, 'dead',
            v_job.claimed_at, v_job.available_at, v_job.cache_key);
        return query select 'dead'::text, v_reason, null::timestamptz;
        return;
    end if;
    v_delay := coalesce(_fail.retry_in, queue._backoff(v_cfg, v_job.attempt));
    update queue.jobs as j
    set status = 'pending', token = null, worker = null, claimed_at = null,
        lease_expires_at = null, available_at = now() + v_delay,
        errors = queue._add_error(j.errors,
            queue._error_entry(v_job.attempt, v_error, v_job.worker, v_delay))
    where j.id = v_job.id
    returning j.available_at into v_at;
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'retry',
        v_job.claimed_at, v_job.available_at, v_job.cache_key, ready_at => v_at);
    return query select 'pending'::text, 'retry'::text, v_at;
end
$$;

CREATE FUNCTION queue._fire(schedule_name text, max_ticks integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._fire_due(queues text[] DEFAULT NULL::text[], lim integer DEFAULT 100, max_ticks integer DEFAULT NULL::integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._fire_or_record(schedule_name text, max_ticks integer DEFAULT NULL::integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._forget_unused() RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_queues bigint;
    v_categories bigint;
begin
    with gone as (
        delete from queue.queues as q
        where q.queue in (
            select d.queue from queue.queues as d
            where queue._says_nothing(d, queue._queue_defaults())  -- (queue/_policy.sql)
            for update skip locked
        )
        returning 1
    )
    select count(*) into v_queues from gone;
    with gone as (
        delete from queue.categories as c
        where c.id in (
            select d.id from queue.categories as d
            where d.max_running = 1 and d.created_at < now() - interval '1 day'
              and not exists (select from queue.worker_locks as w where w.category_id = d.id)
              and not exists (select from queue.lock_stats as s where s.category_id = d.id)
            for update skip locked
        )
        returning 1
    )
    select count(*) into v_categories from gone;
    return v_queues + v_categories;
end
$$;

CREATE FUNCTION queue._free_slots(job_ids bigint[], queues text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
declare
    v_cat bigint;
    v_max int;
    v_queue text;
begin
    if cardinality(_free_slots.job_ids) = 1 then
        delete from queue.worker_locks as w where w.job_id = _free_slots.job_ids[1]
        returning w.category_id into v_cat;
        if v_cat is not null then
            select c.max_running into v_max from queue.categories as c where c.id = v_cat;
            -- full before this free: the slots left, and the one just freed
            if v_max > 0 and (select count(*) from queue.worker_locks as w
                              where w.category_id = v_cat) + 1 >= v_max then
                perform queue._notify_ready(_free_slots.queues[1]);
            end if;
        end if;
        return;
    end if;
    for v_queue in
        with freed as (
            delete from queue.worker_locks as w where w.job_id = any (_free_slots.job_ids)
            -- each freed slot's limit by primary key (a join let the planner hash every
            -- category: a read that grew with the number of categories)
            returning w.job_id, w.category_id, (
                select c.max_running from queue.categories as c where c.id = w.category_id
            ) as max_running
        )
        select distinct q.queue
        from freed as f
        join unnest(_free_slots.job_ids, _free_slots.queues) as q (job_id, queue)
            on q.job_id = f.job_id
        where f.max_running > 0
            -- full before this free: the statement's snapshot still holds the freed slots
            and (select count(*) from queue.worker_locks as w
                 where w.category_id = f.category_id) >= f.max_running
    loop
        perform queue._notify_ready(v_queue);
    end loop;
end
$$;

CREATE FUNCTION queue._full_categories(at timestamp with time zone) RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return (select coalesce(array_agg(f.category), '{}')
    from (
        select c.category from queue.categories as c where c.max_running = 0
        union all
        select c.category
        from (select w.category_id, count(*) as n from queue.worker_locks as w group by 1) as r
        join queue.categories as c on c.id = r.category_id
        where r.n >= c.max_running and c.max_running > 0
          and (select count(*) from queue.worker_locks as w
               join queue.jobs as j on j.id = w.job_id
               where w.category_id = c.id and j.lease_expires_at > _full_categories.at)
              >= c.max_running
    ) as f);
end
$$;

CREATE FUNCTION queue._gate(worker text, queues text[], batch integer, ids bigint[], cats text[], exclude text[], v_now timestamp with time zone) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_take bigint[] := '{}'::bigint[];
    v_new text[];
    v_lock record;
    v_round record;
    v_dropped boolean;
    -- the categories this claim holds locked: name, id, limit, starts left, slots taken
    v_lk_names text[] := '{}'::text[];
    v_lk_ids bigint[] := '{}'::bigint[];
    v_lk_max int[] := '{}'::int[];
    v_lk_rate int[] := '{}'::int[];
    v_lk_taken int[] := '{}'::int[];
    v_stat_ids bigint[] := '{}'::bigint[];
    v_stat_fail bigint[] := '{}'::bigint[];
    v_rate_refused bigint[] := '{}'::bigint[];
    v_rated boolean := false;
begin
    for v_r in 1 .. 8 loop
        v_dropped := false;
        v_take := v_take || array(
            select c.id from unnest(ids, cats) as c (id, cat) where c.cat is null);
        v_new := array(
            select distinct c.cat from unnest(cats) as c (cat)
            where c.cat is not null and c.cat <> all (v_lk_names));
        if cardinality(v_new) > 0 then
            select * into v_lock from queue._gate_lock(v_new, v_now);
            v_rated := v_rated or v_lock.rated;
            v_stat_ids := v_stat_ids || v_lock.refused_ids || v_lock.ids;
            v_stat_fail := v_stat_fail
                || array_fill(1::bigint, array[cardinality(v_lock.refused_ids)])
                || array_fill(0::bigint, array[cardinality(v_lock.ids)]);
            exclude := exclude || v_lock.refused;
            v_dropped := cardinality(v_lock.refused) > 0;
            v_lk_names := v_lk_names || v_lock.names;
            v_lk_ids := v_lk_ids || v_lock.ids;
            v_lk_max := v_lk_max || v_lock.maxes;
            v_lk_rate := v_lk_rate || v_lock.rates;
            v_lk_taken := v_lk_taken || array_fill(0, array[cardinality(v_lock.ids)]);
        end if;
        select * into v_round from queue._gate_take(worker, ids, cats, v_take, v_lk_names,
            v_lk_ids, v_lk_max, v_lk_rate, v_now);
        v_take := v_take || v_round.taken;
        -- no slot left: the category's other candidates go back, it is left out
        exclude := exclude || v_round.filled;
        v_dropped := v_dropped or v_round.dropped;
        v_rate_refused := v_rate_refused || v_round.rate_refused;
        for v_i in 1 .. cardinality(v_round.ords) loop
            v_lk_taken[v_round.ords[v_i]] := v_lk_taken[v_round.ords[v_i]] + v_round.counts[v_i];
            v_lk_rate[v_round.ords[v_i]] := v_lk_rate[v_round.ords[v_i]] - v_round.counts[v_i];
        end loop;
        exit when not v_dropped or cardinality(v_take) >= batch;
        select array_agg(c.id order by c.priority desc, c.available_at, c.id),
            array_agg(c.category order by c.priority desc, c.available_at, c.id)
        into ids, cats
        from queue._candidates(queues, batch - cardinality(v_take), exclude, v_take) as c;
        exit when ids is null;
    end loop;

    insert into queue.lock_stats as s (minute, backend, category_id, attempts, failures,
        rate_refusals)
    select date_trunc('minute', now()), pg_backend_pid(), u.cat_id, 1, u.f,
        case when u.cat_id = any (v_rate_refused) then 1 else 0 end
    from unnest(v_stat_ids, v_stat_fail) as u (cat_id, f)
    on conflict (minute, backend, category_id) do update
    set attempts = s.attempts + 1, failures = s.failures + excluded.failures,
        rate_refusals = s.rate_refusals + excluded.rate_refusals;
    -- the starts of rate-limited categories join their window: its latest rate_starts
    -- start times are all a later claim needs (still under the category's row lock)
    if v_rated then
        perform queue._rate_record(v_lk_ids, v_lk_taken, v_now);
    end if;
    return v_take;
end
$$;

CREATE FUNCTION queue._gate_lock(categories text[], v_now timestamp with time zone, OUT names text[], OUT ids bigint[], OUT maxes integer[], OUT rates integer[], OUT rated boolean, OUT refused text[], OUT refused_ids bigint[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_cat text;
    v_cat_id bigint;
    v_max int;
    v_rate_left int;
begin
    select coalesce(array_agg(k.category), '{}'), coalesce(array_agg(k.id), '{}'),
        coalesce(array_agg(k.max_running), '{}'), coalesce(array_agg(k.rate_left), '{}'),
        coalesce(bool_or(k.rate_left is not null), false)
    into names, ids, maxes, rates, rated
    from (
        select c.id, c.category, c.max_running,
            case when c.rate_starts is not null then queue._rate_left(
                c.rate_log, c.rate_starts, c.rate_per, v_now) end as rate_left
        from queue.categories as c
        where c.category = any (_gate_lock.categories)
        for no key update skip locked
    ) as k;
    refused := '{}';
    refused_ids := '{}';
    if cardinality(names) = cardinality(_gate_lock.categories) then
        return;
    end if;
    -- not locked: busy (another claimer holds the row), or no row yet
    select coalesce(array_agg(c.category), '{}'), coalesce(array_agg(c.id), '{}')
    into refused, refused_ids
    from queue.categories as c
    where c.category = any (_gate_lock.categories) and c.category <> all (names);
    for v_cat in
        select n.cat from unnest(_gate_lock.categories) as n (cat)
        where n.cat <> all (names) and n.cat <> all (refused)
    loop
        v_cat_id := queue._category_id(v_cat);
        select c.max_running, queue._rate_left(c.rate_log, c.rate_starts, c.rate_per, v_now)
        into v_max, v_rate_left
        from queue.categories as c
        where c.id = v_cat_id
        for no key update skip locked;
        if found then
            names := names || v_cat;
            ids := ids || v_cat_id;
            maxes := maxes || v_max;
            rates := rates || v_rate_left;
            rated := rated or v_rate_left is not null;
        else
            refused := refused || v_cat;
            refused_ids := refused_ids || v_cat_id;
        end if;
    end loop;
end
$$;

CREATE FUNCTION queue._gate_take(worker text, ids bigint[], cats text[], take bigint[], lk_names text[], lk_ids bigint[], lk_max integer[], lk_rate integer[], v_now timestamp with time zone, OUT taken bigint[], OUT filled text[], OUT dropped boolean, OUT rate_refused bigint[], OUT ords integer[], OUT counts integer[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    with cand as materialized (
        select c.id, c.cat, c.n
        from unnest(_gate_take.ids, _gate_take.cats) with ordinality as c (id, cat, n)
        where c.cat = any (_gate_take.lk_names)
    ),
    room as materialized (
        select k.name, k.id, k.ord, k.rate, s.slots,
            greatest(least(s.slots, coalesce(k.rate, s.slots)), 0) as free
        from unnest(_gate_take.lk_names, _gate_take.lk_ids, _gate_take.lk_max,
            _gate_take.lk_rate) with ordinality as k (name, id, max, rate, ord)
        cross join lateral (
            select k.max - count(*) as slots
            from queue.worker_locks as w
            join queue.jobs as j on j.id = w.job_id
            where w.category_id = k.id
              and (j.lease_expires_at > v_now or j.id = any (_gate_take.take))
        ) as s
        where k.name = any (_gate_take.cats)
    ),
    took as (
        insert into queue.worker_locks (job_id, category_id, worker)
        select r.id, r.cat_id, _gate_take.worker
        from (
            select c.id, k.id as cat_id, k.free,
                row_number() over (partition by c.cat order by c.n) as rn
            from cand as c join room as k on k.name = c.cat
        ) as r
        where r.rn <= r.free
        returning job_id, category_id
    ),
    per as materialized (
        select k.name, k.id, k.ord, k.rate, k.slots, k.free,
            coalesce(t.n, 0) as n_taken, c.n as n_cand
        from room as k
        join (select c.cat, count(*) as n from cand as c group by c.cat) as c
            on c.cat = k.name
        left join (
            select t.category_id, count(*) as n from took as t group by t.category_id
        ) as t on t.category_id = k.id
    )
    select coalesce((select array_agg(t.job_id) from took as t), '{}'),
        coalesce(array_agg(p.name) filter (where p.n_taken >= p.free), '{}'),
        coalesce(bool_or(p.n_taken >= p.free and p.n_cand > p.n_taken), false),
        coalesce(array_agg(p.id) filter (where p.rate < p.slots), '{}'),
        coalesce(array_agg(p.ord::int) filter (where p.n_taken > 0), '{}'),
        coalesce(array_agg(p.n_taken::int) filter (where p.n_taken > 0), '{}')
    into taken, filled, dropped, rate_refused, ords, counts
    from per as p;
end
$$;

CREATE FUNCTION queue._gated_head(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[], OUT ids bigint[], OUT categories text[], OUT priorities integer[], OUT availabilities timestamp with time zone[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_head int := 4 * lim + 2 * coalesce(cardinality(exclude_categories), 0) + 16;
    v_all boolean := coalesce(cardinality(exclude_categories), 0) = 0
        and coalesce(cardinality(exclude_ids), 0) = 0;
    v_read record;
begin
    if queues is null then
        if (select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1) is not null then
            return;
        end if;
        if v_all then
            -- nothing left out: the gated index in claim order, locking stops at lim
            select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.category), '{}'),
                coalesce(array_agg(x.priority), '{}'), coalesce(array_agg(x.available_at), '{}')
            into ids, categories, priorities, availabilities
            from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as x;
            return;
        end if;
    elsif cardinality(queues) = 1 then
        if (select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id limit 1) is not null then
            return;
        end if;
        if v_all then
            select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.category), '{}'),
                coalesce(array_agg(x.priority), '{}'), coalesce(array_agg(x.available_at), '{}')
            into ids, categories, priorities, availabilities
            from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as x;
            return;
        end if;
    else
        return;
    end if;
    -- the head, read without locking: how many jobs it read, which of them are candidates
    v_read := queue._gated_head_read(queues, v_head, exclude_categories, exclude_ids);
    if v_read.n >= v_head and coalesce(cardinality(v_read.ids), 0) < lim then
        return;
    end if;
    -- locked in claim order (the LIMIT stops the locking), re-checked on the row locked
    -- (coalesce: no partial index of pending jobs can serve this statement, so it is the
    -- primary key's probes)
    select coalesce(array_agg(x.id order by x.priority desc, x.available_at, x.id), '{}'),
        coalesce(array_agg(x.category order by x.priority desc, x.available_at, x.id), '{}'),
        coalesce(array_agg(x.priority order by x.priority desc, x.available_at, x.id), '{}'),
        coalesce(array_agg(x.available_at order by x.priority desc, x.available_at, x.id),
            '{}')
    into ids, categories, priorities, availabilities
    from (
        select j.id, j.category, j.priority, j.available_at from queue.jobs as j
        where j.id = any (v_read.ids)
          and coalesce(j.status, '') = 'pending' and j.available_at <= now()
        order by j.priority desc, j.available_at, j.id
        limit lim
        for update skip locked
    ) as x;
end
$$;

COMMENT ON FUNCTION queue._gated_head(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[], OUT ids bigint[], OUT categories text[], OUT priorities integer[], OUT availabilities timestamp with time zone[]) IS 'Private: the best ready gated jobs from the head of the gated index, locked exactly.';

CREATE FUNCTION queue._gated_head_read(queues text[], head integer, exclude_categories text[], exclude_ids bigint[], OUT n integer, OUT ids bigint[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    if queues is null then
        select count(*), array_agg(h.id order by h.n)
            filter (where h.category <> all (exclude_categories) and h.id <> all (exclude_ids))
        into n, ids
        from (
            select j.id, j.category, row_number() over () as n from (
                select j.id, j.category from queue.jobs as j
                where j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit head
            ) as j
        ) as h;
    else
        select count(*), array_agg(h.id order by h.n)
            filter (where h.category <> all (exclude_categories) and h.id <> all (exclude_ids))
        into n, ids
        from (
            select j.id, j.category, row_number() over () as n from (
                select j.id, j.category from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                order by j.priority desc, j.available_at, j.id
                limit head
            ) as j
        ) as h;
    end if;
end
$$;

COMMENT ON FUNCTION queue._gated_head_read(queues text[], head integer, exclude_categories text[], exclude_ids bigint[], OUT n integer, OUT ids bigint[]) IS 'Private: the head of the gated index, read without locking, for queue._gated_head.';

CREATE FUNCTION queue._gated_pairs(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) RETURNS TABLE(id bigint, category text, priority integer, available_at timestamp with time zone)
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    return query
    -- Pairs in the order of the index's expression, array[queue, category]. Listed
    -- queues: each queue's first pair (array[queue, ''] sorts before its first category),
    -- then the next pairs while the queue stays the same.
    with recursive pairs (queue, category) as (
        select f.queue, f.category
        from (select distinct q.name from unnest(queues) as q (name)) as q
        cross join lateral (
            select j.queue, j.category from queue.jobs as j
            where array[j.queue, j.category] >= array[q.name, '']
              and j.status = 'pending' and j.category is not null
            order by array[j.queue, j.category]
            limit 1
        ) as f
        where queues is not null and f.queue = q.name
        union all
        (select f.queue, f.category from (
            select j.queue, j.category from queue.jobs as j
            where j.status = 'pending' and j.category is not null
            order by array[j.queue, j.category]
            limit 1
        ) as f where queues is null)
        union all
        select n.queue, n.category
        from pairs as p
        cross join lateral (
            select j.queue, j.category from queue.jobs as j
            where array[j.queue, j.category] > array[p.queue, p.category]
              and j.status = 'pending' and j.category is not null
            order by array[j.queue, j.category]
            limit 1
        ) as n
        where queues is null or n.queue = p.queue
    )
    select h.id, h.category, h.priority, h.available_at
    from pairs as p
    cross join lateral (
        select j.id, j.category, j.priority, j.available_at from queue.jobs as j
        where array[j.queue, j.category] = array[p.queue, p.category]
          and j.status = 'pending' and j.category is not null and j.available_at <= now()
          and j.id <> all (exclude_ids)
        order by j.priority desc, j.available_at, j.id
        limit lim
        for update skip locked
    ) as h
    where p.category <> all (exclude_categories)
    order by h.priority desc, h.available_at, h.id
    limit lim;
end
$$;

COMMENT ON FUNCTION queue._gated_pairs(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) IS 'Private: queue._gated_scan per (queue, category) pair, when the head did not decide.';

CREATE FUNCTION queue._gated_scan(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) RETURNS TABLE(id bigint, category text, priority integer, available_at timestamp with time zone)
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    SET enable_bitmapscan TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_head int := 4 * lim + 2 * coalesce(cardinality(exclude_categories), 0) + 16;
    v_head_ids bigint[];
    v_ids bigint[];
begin
    -- the head, read without locking (in index order: the function reads no bitmap)
    if queues is null then
        v_head_ids := array(
            select j.id from queue.jobs as j
            where j.status = 'pending' and j.category is not null and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id
            limit v_head);
    elsif cardinality(queues) = 1 then
        v_head_ids := array(
            select j.id from queue.jobs as j
            where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
              and j.status = 'pending' and j.category is not null
              and j.available_at <= now()
            order by j.priority desc, j.available_at, j.id
            limit v_head);
    end if;
    if v_head_ids is not null then
        -- its jobs outside the left-out categories, locked by primary key (re-checked on the
        -- row locked), the best lim of them kept
        v_ids := array(
            select x.id from (
                select j.id, j.priority, j.available_at from queue.jobs as j
                where j.id = any (v_head_ids)
                  -- (coalesce: no partial index of pending jobs can serve this statement,
                  -- so it is the primary key's probes, never a walk of the gated backlog)
                  and coalesce(j.status, '') = 'pending'
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                for update skip locked
            ) as x
            order by x.priority desc, x.available_at, x.id
            limit lim);
    end if;
    if cardinality(v_ids) >= lim then
        return query
        select j.id, j.category, j.priority, j.available_at from queue.jobs as j
        where j.id = any (v_ids) and (queues is null or j.queue = queues[1])
        order by j.priority desc, j.available_at, j.id;
        return;
    end if;

    -- the head is mostly left-out categories: per (queue, category) pair
    return query
    select p.id, p.category, p.priority, p.available_at
    from queue._gated_pairs(queues, lim, exclude_categories, exclude_ids) as p;
end
$$;

COMMENT ON FUNCTION queue._gated_scan(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) IS 'Private: the best ready gated jobs outside some categories, per (queue, category), locked.';

CREATE FUNCTION queue._heartbeat(job_ids bigint[], tokens uuid[], extend interval) RETURNS TABLE(job_id bigint, lease_expires_at timestamp with time zone, abort_requested boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_now timestamptz := queue._lease_clock();
begin
    perform queue._check_interval(_heartbeat.extend, 'extend', true, false, 'lease');
    return query
    with input as (
        select i.id, i.tok, i.n
        from unnest(_heartbeat.job_ids, _heartbeat.tokens) with ordinality as i (id, tok, n)
    ),
    locked as (
        -- By primary key (= any), never a scan of the running jobs: a token is set only
        -- while a job runs, so token and unexpired lease say "running" without naming the
        -- status (which would let the planner pick jobs_lease_idx on stale statistics).
        select j.id from queue.jobs as j
        where j.id = any (_heartbeat.job_ids) and j.lease_expires_at > v_now
          and exists (select from input as i where i.id = j.id and i.tok = j.token)
        order by j.id
        for update of j
    ),
    extended as (
        update queue.jobs as j
        set lease_expires_at = case
            when j.abort_requested_at is not null then j.lease_expires_at
            -- never past the attempt's deadline (claim time + the job's timeout)
            else least(v_now + coalesce(
                _heartbeat.extend,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                queue._lease_default()), j.claimed_at + j.timeout)
            end
        from locked as l where j.id = l.id
        returning j.id, j.token, j.lease_expires_at,
            j.abort_requested_at is not null as abort_requested
    )
    -- by id and token: a wrong token beside the job's right one in the same call is lost
    select i.id, e.lease_expires_at, e.abort_requested
    from input as i left join extended as e on e.id = i.id and e.token = i.tok
    order by i.n;
end
$$;

COMMENT ON FUNCTION queue._heartbeat(job_ids bigint[], tokens uuid[], extend interval) IS 'Private: extend leases (not of jobs whose abort was requested); report aborts.';

CREATE FUNCTION queue._heartbeat_one(job_id bigint, token uuid, extend interval) RETURNS TABLE(lease_expires_at timestamp with time zone, abort_requested boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_now timestamptz := queue._lease_clock();
begin
    perform queue._check_interval(_heartbeat_one.extend, 'extend', true, false, 'lease');
    return query
    update queue.jobs as j
    set lease_expires_at = case
        when j.abort_requested_at is not null then j.lease_expires_at
        -- never past the attempt's deadline (claim time + the job's timeout)
        else least(v_now + coalesce(
            _heartbeat_one.extend,
            (select q.lease from queue.queues as q where q.queue = j.queue),
            queue._lease_default()), j.claimed_at + j.timeout)
        end
    -- By primary key, never a scan of the running jobs (as complete): a token is set only
    -- while a job runs, so token and unexpired lease say "running" without naming the
    -- status, which would let the planner read jobs_lease_idx on stale statistics.
    where j.id = _heartbeat_one.job_id and j.token = _heartbeat_one.token
      and j.lease_expires_at > v_now
    returning j.lease_expires_at, j.abort_requested_at is not null;
end
$$;

COMMENT ON FUNCTION queue._heartbeat_one(job_id bigint, token uuid, extend interval) IS 'Private: extend one lease (not of a job whose abort was requested); report an abort.';

CREATE FUNCTION queue._hint_key(queue_name text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if queue_name is null then
        return 0;
    end if;
    return coalesce(nullif(hashtext(queue_name), 0), 1);
end
$$;

CREATE FUNCTION queue._hint_wanted(key integer) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_sleeping boolean;
begin
    select bool_or(s.sleeping) into v_sleeping from queue.sleepers as s
    where s.key = _hint_wanted.key or s.key = 0;
    return coalesce(v_sleeping, true);
end
$$;

CREATE FUNCTION queue._hist(ms double precision[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_bounds constant double precision[] := queue._hist_bounds();
    v_hist bigint[] := array_fill(0::bigint, array[16]);
    v_b int;
begin
    -- a loop, not a query: most calls count one latency (an attempt's end), where a query
    -- cost several times the loop
    for v_i in 1 .. coalesce(cardinality(ms), 0) loop
        v_b := width_bucket(ms[v_i], v_bounds) + 1;
        v_hist[v_b] := v_hist[v_b] + 1;
    end loop;
    return v_hist;
end
$$;

CREATE FUNCTION queue._hist_add(a bigint[], b bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_sum bigint[] := a;
begin
    for v_i in 1 .. 16 loop
        v_sum[v_i] := a[v_i] + b[v_i];
    end loop;
    return v_sum;
end
$$;

CREATE FUNCTION queue._hist_bounds() RETURNS double precision[]
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select '{1,2,5,10,25,50,100,250,500,1000,2500,5000,10000,30000,60000}'::double precision[]
$$;

CREATE FUNCTION queue._hist_quantile(hist bigint[], q double precision) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_bounds double precision[] := queue._hist_bounds();
    v_total bigint := 0;
    v_cum bigint := 0;
    v_target double precision;
    v_lo double precision;
    v_hi double precision;
begin
    if hist is null then
        return null;
    end if;
    select coalesce(sum(h), 0) into v_total from unnest(hist) as h;
    if v_total = 0 then
        return null;
    end if;
    v_target := q * v_total;
    for v_i in 1 .. cardinality(hist) loop
        if v_cum + hist[v_i] >= v_target and hist[v_i] > 0 then
            v_lo := case when v_i = 1 then 0 else v_bounds[v_i - 1] end;
            v_hi := coalesce(v_bounds[v_i], v_lo);
            return v_lo + (v_hi - v_lo) * (v_target - v_cum) / hist[v_i];
        end if;
        v_cum := v_cum + hist[v_i];
    end loop;
    return v_bounds[cardinality(v_bounds)];
end
$$;

CREATE FUNCTION queue._history_completed(jobs jsonb, finished_at timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    insert into queue.history (
        job_id, queue, category, priority, state, payload, attempt, max_attempts,
        enqueued_at, started_at, finished_at, worker, result, errors, keep_until
    )
    select h.job_id, h.queue, h.category, h.priority, 'completed', h.payload, h.attempt,
        h.max_attempts, h.enqueued_at, h.started_at, _history_completed.finished_at, h.worker,
        h.result, h.errors, _history_completed.finished_at + queue._history_keep(h.queue)
    from jsonb_to_recordset(_history_completed.jobs) as h (
        job_id bigint, queue text, category text, priority int, payload jsonb,
        attempt int, max_attempts int, enqueued_at timestamptz, started_at timestamptz,
        worker text, result jsonb, errors jsonb
    );
end
$$;

CREATE FUNCTION queue._history_keep(queue_name text) RETURNS interval
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select q.history_retention from queue.queues as q where q.queue = queue_name
$$;

COMMENT ON FUNCTION queue._history_keep(queue_name text) IS 'Private: a queue''s history retention.';

CREATE FUNCTION queue._history_roll() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '200ms'
    SET "DateStyle" TO 'ISO, YMD'
    SET "TimeZone" TO 'UTC'
    AS $$
declare
    v_width interval;
    v_longest interval;
    v_part record;
    v_dropped int := 0;
    v_lo timestamptz;
    v_hi timestamptz;
    v_name text;
begin
    -- nothing kept and nothing to drop (the usual install): no lock, no write
    if not exists (select from queue.queues as q where q.history_retention is not null)
        and not exists (select from pg_inherits as i
                        where i.inhparent = 'queue.history'::regclass
                          and i.inhrelid <> 'queue.history_default'::regclass)
        and not exists (select from queue.history_default) then
        return 0;
    end if;
    insert into queue.history_settings as s (id) values (true) on conflict (id) do nothing;
    select s.partition_width into v_width from queue.history_settings as s
    where s.id for update skip locked;
    if v_width is null then
        return 0;  -- another session is rolling
    end if;

    for v_part in
        select format('%I.%I', n.nspname, c.relname) as name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                'TO \(''([^'']+)''\)'))[1]::timestamptz as hi
        from pg_inherits as i
        join pg_class as c on c.oid = i.inhrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where i.inhparent = 'queue.history'::regclass
          and pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
        order by 2
    loop
        exit when v_part.hi > now();
        begin
            execute format('drop table %s', v_part.name);
            v_dropped := v_dropped + 1;
        exception when lock_not_available or object_in_use then
            exit;  -- busy (another session, or a query of this one still reads it): next time
        end;
    end loop;
    delete from queue.history_default as d where d.keep_until <= now();

    select max(q.history_retention) into v_longest from queue.queues as q;
    if v_longest is null then
        return v_dropped;
    end if;
    -- partitions at least partition_width wide, and never more than about 50 ahead; as a
    -- length of time (date_bin cannot bin by months: '5 years' / 48 is '1 mon 7 days 12:00',
    -- and a width of months stored before configure_history refused them becomes 30 days)
    v_width := greatest(make_interval(secs => extract(epoch from v_width)),
        date_trunc('second', make_interval(secs => extract(epoch from v_longest) / 48)));
    select max((regexp_match(pg_get_expr(c.relpartbound, c.oid),
            'TO \(''([^'']+)''\)'))[1]::timestamptz)
    into v_lo
    from pg_inherits as i
    join pg_class as c on c.oid = i.inhrelid
    where i.inhparent = 'queue.history'::regclass
      and pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT';
    v_lo := greatest(coalesce(v_lo, '-infinity'), date_bin(v_width, now(), 'epoch'));
    while v_lo < now() + v_longest + 2 * v_width loop
        v_hi := v_lo + v_width;
        v_name := 'history_' || to_char(v_lo, 'YYYYMMDD"T"HH24MISS');
        begin
            execute format('create table queue.%I (like queue.history including defaults '
                'including constraints)', v_name);
            execute format('alter table queue.%I add constraint %I check '
                '(keep_until >= %L and keep_until < %L)', v_name, v_name || '_range', v_lo, v_hi);
            -- rows that waited in the default partition for this range move first
            execute format('with moved as (delete from queue.history_default as d '
                'where d.keep_until >= %L and d.keep_until < %L returning d.*) '
                'insert into queue.%I select * from moved', v_lo, v_hi, v_name);
            execute format('alter table queue.history attach partition queue.%I '
                'for values from (%L) to (%L)', v_name, v_lo, v_hi);
            execute format('alter table queue.%I drop constraint %I', v_name, v_name || '_range');
            execute format('revoke all on queue.%I from public', v_name);
        exception when lock_not_available then
            exit;  -- busy: next time (the subtransaction took the half-made table back)
        end;
        v_lo := v_hi;
    end loop;
    return v_dropped;
end
$$;

COMMENT ON FUNCTION queue._history_roll() IS 'Private: drop passed history partitions, create those needed ahead.';

CREATE FUNCTION queue._job_name(state text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when state = 'ready' then 'pending' else state end
$$;

COMMENT ON FUNCTION queue._job_name(state text) IS 'Private: the name queue.job gives a state (pending for ready).';

CREATE FUNCTION queue._job_state(status text, due boolean, retried boolean) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case
        when status = 'running' then 'running'
        when status = 'waiting' then 'waiting'
        when due then 'ready'
        when retried then 'failed'
        else 'scheduled'
    end
$$;

COMMENT ON FUNCTION queue._job_state(status text, due boolean, retried boolean) IS 'Private: the state (waiting, scheduled, ready, running, failed) of a live job.';

CREATE FUNCTION queue._json_fits(value jsonb, bound bigint) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_size record;
begin
    v_size := queue._json_size(value, bound);
    return v_size.bytes <= bound and v_size.longest_number <= queue._max_number_chars();
end
$$;

CREATE FUNCTION queue._json_number_chars(value numeric) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._json_numbers(value jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

CREATE FUNCTION queue._json_size(value jsonb, bound bigint, OUT bytes bigint, OUT exact boolean, OUT longest_number bigint) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._latest_tick(cron text, every interval, tz text, anchor timestamp with time zone, since timestamp with time zone, at timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._lease_clock() RETURNS timestamp with time zone
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return clock_timestamp();
end
$$;

CREATE FUNCTION queue._lease_default() RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select interval '60 seconds' $$;

CREATE FUNCTION queue._lease_lost(job_id bigint, token uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_job record;
    v_detail text;
begin
    select j.attempt, j.available_at, j.abort_requested_at, j.timeout, j.lease_expires_at,
        j.lease_expires_at >= j.claimed_at + j.timeout as capped
    into v_job from queue.jobs as j where j.id = _lease_lost.job_id;
    -- (a write refused while the lease still runs: a heartbeat at the attempt's deadline)
    v_detail := case coalesce(queue._refusal(_lease_lost.job_id, _lease_lost.token),
            case when v_job.capped then 'timed_out' end, 'expired')
        when 'gone' then format(
            'job %s is no longer live (completed, dead-lettered or cancelled)', job_id)
        when 'retry_pending' then format('job %s is pending again: its attempt %s failed '
            '(queue.fail) and waits for its retry at %s', job_id, v_job.attempt,
            v_job.available_at)
        when 'pending_again' then format(
            'job %s is pending again (its lease expired or it was released)', job_id)
        -- not who holds it now: any caller with any job id would learn it
        when 'claimed_again' then format('job %s was claimed again (attempt %s)', job_id,
            v_job.attempt)
        when 'aborted' then format('an abort of job %s was requested at %s: end the attempt '
            'with queue.fail, the job ends cancelled', job_id, v_job.abort_requested_at)
        when 'timed_out' then format('job %s ran past its timeout of %s', job_id, v_job.timeout)
        else format('the lease of job %s expired at %s', job_id, v_job.lease_expires_at)
    end;
    raise exception 'lease lost on job %', job_id
        using errcode = 'AN001', detail = v_detail,
        hint = 'Discard this attempt''s outcome: the job will run (or ran) again elsewhere.';
end
$$;

CREATE FUNCTION queue._lease_taken(worker text, job_ids bigint[], lease interval, v_now timestamp with time zone) RETURNS SETOF queue.claimed
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query
    with claimed as (
        update queue.jobs as j
        set status = 'running', attempt = j.attempt + 1, token = gen_random_uuid(),
            worker = _lease_taken.worker, claimed_at = v_now,
            lease_expires_at = least(v_now + coalesce(
                _lease_taken.lease,
                (select q.lease from queue.queues as q where q.queue = j.queue),
                queue._lease_default()), v_now + j.timeout)
        where j.id = any (_lease_taken.job_ids)
        returning j.id, j.queue, j.category, j.priority, j.payload, j.attempt, j.max_attempts,
            j.token, j.lease_expires_at, j.enqueued_at, j.cache_key, j.cache_version,
            j.available_at, v_now + j.timeout as deadline
    )
    select c.id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.deadline
    from claimed as c
    order by c.priority desc, c.available_at, c.id;
end
$$;

CREATE FUNCTION queue._limits(OUT max_lease interval, OUT max_delay interval, OUT min_priority integer, OUT max_priority integer, OUT max_error_bytes integer, OUT max_result_bytes integer) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._live_counts() RETURNS TABLE(queue text, category text, ready bigint, scheduled bigint, running bigint, waiting bigint, oldest_ready timestamp with time zone)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select g.queue, g.category,
        coalesce(sum(g.n) filter (where s.state = 'ready'), 0)::bigint,
        coalesce(sum(g.n) filter (where s.state in ('scheduled', 'failed')), 0)::bigint,
        coalesce(sum(g.n) filter (where s.state = 'running'), 0)::bigint,
        coalesce(sum(g.n) filter (where s.state = 'waiting'), 0)::bigint,
        min(g.first_at) filter (where s.state = 'ready')
    from (
        select j.queue, coalesce(j.category, '') as category, j.status,
            j.available_at <= now() as due, j.attempt > 0 as retried, count(*) as n,
            min(j.available_at) as first_at
        from queue.jobs as j group by 1, 2, 3, 4, 5
    ) as g
    cross join lateral (select queue._job_state(g.status, g.due, g.retried) as state) as s
    group by 1, 2
$$;

COMMENT ON FUNCTION queue._live_counts() IS 'Private: the live jobs of each queue and category by state (for status and stats).';

CREATE FUNCTION queue._live_state(status text, available_at timestamp with time zone, attempt integer) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select queue._job_name(queue._job_state(status, available_at <= now(), attempt > 0))
$$;

COMMENT ON FUNCTION queue._live_state(status text, available_at timestamp with time zone, attempt integer) IS 'Private: the state (scheduled, pending, failed, running) of a live job.';

CREATE FUNCTION queue._lock_down() RETURNS SETOF text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    execute format('revoke connect, temporary on database %I from public', current_database());
    return next 'revoked connect, temporary on the database from public';
    execute format('grant connect on database %I to andal_producer, andal_worker, andal_admin, '
        'andal_monitor', current_database());
    return next 'granted connect to andal_producer, andal_worker, andal_admin, andal_monitor';
    execute format('alter database %I set andal.notify_names = off', current_database());
    return next 'notifications carry no names (andal.notify_names = off)';
end
$$;

COMMENT ON FUNCTION queue._lock_down() IS 'Revoke CONNECT and TEMPORARY from PUBLIC on this database; notifications without names.';

CREATE FUNCTION queue._maintain_failed(step text, state text, message text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    raise warning 'queue.maintain: % failed (%): %', step, state, message
        using hint = 'The other housekeeping steps ran; this one is tried again by the next '
        'queue.maintain().';
end
$$;

CREATE FUNCTION queue._max_number_chars() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 1000 $$;

CREATE FUNCTION queue._next_tick(cron text, every interval, tz text, anchor timestamp with time zone, after timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

CREATE FUNCTION queue._notify(channel text, payload text, anonymous text DEFAULT ''::text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform pg_notify(channel,
        case when coalesce(current_setting('andal.notify_names', true), '') <> 'off'
            then payload else anonymous end);
end
$$;

CREATE FUNCTION queue._notify_ready(queue_name text, enabled boolean DEFAULT NULL::boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if enabled is null then
        select q.notify into enabled from queue.queues as q where q.queue = queue_name;
    end if;
    if coalesce(enabled, true) and queue._hint_wanted(queue._hint_key(queue_name)) then
        perform queue._notify('andal_jobs', queue_name);
    end if;
end
$$;

CREATE FUNCTION queue._out_of_attempts(attempt integer, max_attempts integer) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return attempt >= max_attempts;
end
$$;

CREATE FUNCTION queue._partition(OUT k integer, OUT n integer) RETURNS record
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    select m[1]::int, m[2]::int
    from (select regexp_match(
        obj_description(pg_get_serial_sequence('queue.jobs', 'id')::regclass, 'pg_class'),
        '^andal partition (\d+) of (\d+)$') as m) as d
$_$;

COMMENT ON FUNCTION queue._partition(OUT k integer, OUT n integer) IS 'This database''s router partition (k, n), or nulls.';

CREATE FUNCTION queue._pending_queues() RETURNS SETOF text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    with recursive ungated (queue) as (
        (select j.queue from queue.jobs as j
         where j.status = 'pending' and j.category is null
         order by j.queue limit 1)
        union all
        select (select j.queue from queue.jobs as j
                where j.status = 'pending' and j.category is null and j.queue > u.queue
                order by j.queue limit 1)
        from ungated as u where u.queue is not null
    ),
    gated (queue) as (
        (select j.queue from queue.jobs as j
         where j.status = 'pending' and j.category is not null
         order by j.queue limit 1)
        union all
        select (select j.queue from queue.jobs as j
                where j.status = 'pending' and j.category is not null and j.queue > g.queue
                order by j.queue limit 1)
        from gated as g where g.queue is not null
    )
    select u.queue from ungated as u where u.queue is not null
    union
    select g.queue from gated as g where g.queue is not null
$$;

CREATE FUNCTION queue._prom_label(value text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select '"' || replace(replace(replace(value, '\', '\\'), '"', '\"'), e'\n', '\n') || '"'
$$;

CREATE FUNCTION queue._prune_completions() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
declare
    v_n int;
begin
    delete from queue.completions as c
    where c.completed_at < now() - queue._completions_keep();
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

COMMENT ON FUNCTION queue._prune_completions() IS 'Private: delete expired rows of queue.completions.';

CREATE FUNCTION queue._queue_defaults() RETURNS queue.queues
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_defaults jsonb;
    v_sql text;
begin
    select 'select jsonb_build_object(' || string_agg(format('%L, (%s)::%s', a.attname,
            coalesce(pg_get_expr(d.adbin, d.adrelid), 'null'),
            format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum) || ')'
    into v_sql
    from pg_attribute as a
    left join pg_attrdef as d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = 'queue.queues'::regclass and a.attnum > 0 and not a.attisdropped;
    execute v_sql into v_defaults;  -- the catalog's own default expressions, no caller's text
    return jsonb_populate_record(null::queue.queues, v_defaults);
end
$$;

COMMENT ON FUNCTION queue._queue_defaults() IS 'Private: the policy of a queue never configured (the column defaults of queue.queues).';

CREATE FUNCTION queue._rate_left(rate_log timestamp with time zone[], rate_starts integer, rate_per interval, at timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_since timestamptz;
    v_at timestamptz;
    v_in int := 0;
begin
    if rate_starts is null then
        return null;
    end if;
    v_since := _rate_left.at - rate_per;
    foreach v_at in array coalesce(rate_log, '{}') loop
        if v_at > v_since then
            v_in := v_in + 1;
        end if;
    end loop;
    return rate_starts - v_in;
end
$$;

CREATE FUNCTION queue._rate_record(category_ids bigint[], taken integer[], at timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
begin
    update queue.categories as c
    set rate_log = array(
        select t.at from (
            select x.at from unnest(c.rate_log) as x (at)
            union all
            select _rate_record.at from generate_series(1, u.n)
        ) as t
        order by t.at desc
        limit c.rate_starts)
    from unnest(category_ids, taken) as u (id, n)
    where c.id = u.id and u.n > 0 and c.rate_starts is not null;
end
$$;

CREATE FUNCTION queue._reap(lim integer DEFAULT 100, queues text[] DEFAULT NULL::text[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_job record;
    v_count int := 0;
    v_error text;
    v_timeout boolean;
    -- the jobs taken back, for queue._settle_many: outcome, queue, category, times, cache key
    v_ids bigint[] := '{}'::bigint[];
    v_outcomes text[] := '{}'::text[];
    v_queues text[] := '{}'::text[];
    v_cats text[] := '{}'::text[];
    v_claimed timestamptz[] := '{}'::timestamptz[];
    v_avail timestamptz[] := '{}'::timestamptz[];
    v_keys text[] := '{}'::text[];
    v_ready timestamptz[] := '{}'::timestamptz[];
    v_at timestamptz;
    v_now timestamptz := queue._lease_clock();
begin
    for v_job in
        select j.* from queue.jobs as j
        where j.status = 'running' and j.lease_expires_at <= v_now
          and (_reap.queues is null or j.queue = any (_reap.queues))
        order by j.lease_expires_at
        limit lim
        for update skip locked
    loop
        v_timeout := v_job.timeout is not null
            and v_job.lease_expires_at >= v_job.claimed_at + v_job.timeout;
        if v_timeout then
            -- the attempt ran to its deadline: a failure with reason timeout, retried after
            -- the queue's backoff (or dead-lettered) like any failure
            v_error := format('timeout: the attempt ran past its timeout of %s (worker %s)',
                v_job.timeout, v_job.worker);
            v_job.errors := queue._add_error(v_job.errors, queue._error_entry(
                v_job.attempt, v_error, v_job.worker) || '{"reason": "timeout"}');
        else
            v_error := format('lease expired (worker %s)', v_job.worker);
            v_job.errors := queue._add_error(v_job.errors,
                queue._error_entry(v_job.attempt, v_error, v_job.worker));
        end if;
        v_at := null;
        if v_job.abort_requested_at is not null then
            -- aborted and never acknowledged: fenced now, cancelled, not retried
            perform queue._bury(v_job.id, 'cancelled', 'aborted: ' || v_error, v_job.errors);
            v_outcomes := v_outcomes || 'cancelled'::text;
        elsif queue._out_of_attempts(v_job.attempt, v_job.max_attempts) then
            perform queue._bury(v_job.id, 'exhausted', v_error, v_job.errors);
            v_outcomes := v_outcomes || 'dead'::text;
        else
            update queue.jobs as j
            set status = 'pending', token = null, worker = null, claimed_at = null,
                lease_expires_at = null, errors = v_job.errors,
                available_at = case when v_timeout
                    then now() + queue._backoff(queue._config(v_job.queue), v_job.attempt)
                    else j.available_at end
            where j.id = v_job.id
            returning j.available_at into v_at;
            v_outcomes := v_outcomes || 'retry'::text;
        end if;
        v_ids := v_ids || v_job.id;
        v_queues := v_queues || v_job.queue;
        v_cats := v_cats || v_job.category;
        v_claimed := v_claimed || v_job.claimed_at;
        v_avail := v_avail || v_job.available_at;
        v_keys := v_keys || v_job.cache_key;
        v_ready := v_ready || v_at;
        v_count := v_count + 1;
    end loop;
    if v_count > 0 then
        perform queue._settle_many(v_ids, v_outcomes, v_queues, v_cats, v_claimed, v_avail,
            v_keys, null, v_ready);
    end if;
    return v_count;
end
$$;

CREATE FUNCTION queue._record(queue_name text, category_name text, completed integer, retried integer, dead integer, run_ms double precision[], wait_ms double precision[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, retried, dead, run_count, run_ms,
        run_hist, wait_hist
    ) values (
        date_trunc('minute', now()), pg_backend_pid(), queue_name, coalesce(category_name, ''),
        completed, retried, dead, coalesce(cardinality(run_ms), 0),
        coalesce((select sum(m) from unnest(run_ms) as m), 0), queue._hist(run_ms),
        queue._hist(wait_ms)
    )
    on conflict (minute, backend, queue, category) do update
    set completed = s.completed + excluded.completed,
        retried = s.retried + excluded.retried,
        dead = s.dead + excluded.dead,
        run_count = s.run_count + excluded.run_count,
        run_ms = s.run_ms + excluded.run_ms,
        run_hist = queue._hist_add(s.run_hist, excluded.run_hist),
        wait_hist = queue._hist_add(s.wait_hist, excluded.wait_hist);
end
$$;

CREATE FUNCTION queue._record_completions(ids bigint[], queues text[], span int8range, completed_at timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    insert into queue.completions (ids, queues, span, completed_at)
    values (_record_completions.ids, _record_completions.queues, _record_completions.span,
        _record_completions.completed_at);
end
$$;

COMMENT ON FUNCTION queue._record_completions(ids bigint[], queues text[], span int8range, completed_at timestamp with time zone) IS 'Private: record the jobs one call completed (queue.completions).';

CREATE FUNCTION queue._refusal(job_id bigint, token uuid) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_job queue.jobs;
    v_now timestamptz := queue._lease_clock();
begin
    select j.* into v_job from queue.jobs as j where j.id = _refusal.job_id;
    if not found then
        return 'gone';
    elsif v_job.status <> 'running' and v_job.errors -> -1 ? 'retry_in'
        and (v_job.errors -> -1 ->> 'attempt')::int = v_job.attempt
        and (v_job.errors -> -1 ->> 'at')::timestamptz
            + (v_job.errors -> -1 ->> 'retry_in')::interval = v_job.available_at then
        -- its newest error is queue.fail's (only fail records retry_in) for the attempt it
        -- is at, and the job still waits for that retry: not claimed or released since
        return 'retry_pending';
    elsif v_job.status <> 'running' then
        return 'pending_again';
    elsif v_job.token is distinct from _refusal.token then
        return 'claimed_again';
    elsif v_job.abort_requested_at is not null and v_job.lease_expires_at > v_now then
        return 'aborted';
    elsif v_job.timeout is not null
        and v_job.lease_expires_at >= v_job.claimed_at + v_job.timeout
        and v_job.lease_expires_at <= v_now then
        return 'timed_out';
    elsif v_job.lease_expires_at <= v_now then
        return 'expired';
    end if;
    return null;
end
$$;

CREATE FUNCTION queue._refuse_read_only(call text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    raise exception '% writes (it changes the jobs it is given): it cannot run in a read-only '
        'transaction', call
        using errcode = '25006',
        hint = 'Call it in a read-write transaction on the primary: not in BEGIN READ ONLY, '
        'not with default_transaction_read_only on, not on a standby.';
end
$$;

CREATE FUNCTION queue._remembered(job_id bigint) RETURNS TABLE(payload jsonb, cache_key text)
    LANGUAGE sql STABLE ROWS 1
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
    select s.payload, s.cache_key from (
        select 1 as src, j.payload, j.cache_key from queue.jobs as j
        where j.id = _remembered.job_id
        union all
        (select 2, h.payload, null from queue.history as h where h.job_id = _remembered.job_id
         order by h.finished_seq desc nulls last, h.finished_at desc limit 1)
        union all
        select 3, d.payload, d.cache_key from queue.dead_letters as d
        where d.job_id = _remembered.job_id
    ) as s
    order by s.src
    limit 1
$$;

COMMENT ON FUNCTION queue._remembered(job_id bigint) IS 'Private: the payload and cache key of a remembered job (live, history, dead letter).';

CREATE FUNCTION queue._retention(lim integer DEFAULT 10000) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_results bigint;
    v_dead bigint;
    v_ticks bigint;
begin
    with gone as (
        delete from queue.results as r
        where r.job_id in (
            select x.job_id from queue.results as x
            left join queue.queues as q on q.queue = x.queue
            where x.completed_at < now() - coalesce(q.results_retention, interval '7 days')
            order by x.completed_at
            limit lim
            for update of x skip locked
        )
        returning 1
    )
    select count(*) into v_results from gone;
    with gone as (
        delete from queue.dead_letters as d
        where d.job_id in (
            select x.job_id from queue.dead_letters as x
            left join queue.queues as q on q.queue = x.queue
            where x.died_at < now() - coalesce(q.dead_retention, interval '30 days')
            order by x.died_at
            limit lim
            for update of x skip locked
        )
        returning 1
    )
    select count(*) into v_dead from gone;
    -- a fired tick is kept a day: next_at has long moved past it
    delete from queue.schedule_ticks as t where t.fired_at < now() - interval '1 day';
    get diagnostics v_ticks = row_count;
    return v_results + v_dead + v_ticks;
end
$$;

CREATE FUNCTION queue._run_task(task text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    case task
        when 'cache_refresh_due' then perform cache.refresh_due();
        when 'cache_prune' then perform cache.prune();
        when 'retention' then perform queue._retention();
        when 'stats_rollup' then perform queue._stats_rollup();
        else raise exception 'unknown housekeeping task %', task using errcode = '42704';
    end case;
end
$$;

CREATE FUNCTION queue._run_tasks() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_s record;
    v_ran int := 0;
    v_error text;
begin
    for v_s in
        select s.name, s.task, s.cron, s.every, s.timezone, s.anchor
        from queue.schedules as s
        where s.task is not null and s.next_at <= now()
        order by s.next_at
        for update skip locked
    loop
        v_error := null;
        begin
            perform queue._run_task(v_s.task);
        exception when others then
            v_error := sqlerrm;
        end;
        update queue.schedules as s
        set next_at = queue._next_tick(v_s.cron, v_s.every, v_s.timezone, v_s.anchor, now()),
            last_tick = coalesce(queue._latest_tick(v_s.cron, v_s.every, v_s.timezone,
                v_s.anchor, s.next_at, now()), s.next_at),
            last_fired_at = now(), last_error = v_error
        where s.name = v_s.name;
        v_ran := v_ran + 1;
    end loop;
    return v_ran;
end
$$;

CREATE FUNCTION queue._says_nothing(q queue.queues, defaults queue.queues) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select to_jsonb(q) - 'queue' - 'updated_at' = to_jsonb(defaults) - 'queue' - 'updated_at'
$$;

COMMENT ON FUNCTION queue._says_nothing(q queue.queues, defaults queue.queues) IS 'Private: whether a queue row holds only the defaults.';

CREATE FUNCTION queue._scan(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) RETURNS TABLE(id bigint, category text, priority integer, available_at timestamp with time zone)
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    AS $$
#variable_conflict use_column
begin
    -- Several queues, or one with categories left out: each listed queue read on its own,
    -- the queues sharing the batch round-robin (queue._scan_queues).
    if queues is not null
       and (cardinality(exclude_categories) > 0 or cardinality(queues) <> 1) then
        return query
        select s.id, s.category, s.priority, s.available_at
        from queue._scan_queues(queues, lim, exclude_categories, exclude_ids) as s;
        return;
    end if;
    -- Categories left out: their backlog may be long, so the gated jobs come from
    -- queue._gated_scan (per category), never from a walk of jobs_gated_idx past them.
    if cardinality(exclude_categories) > 0 and queues is null then
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
            union all
            select g.id, g.category, g.priority, g.available_at
            from queue._gated_scan(queues, lim, exclude_categories, exclude_ids) as g
        ) as c
        order by c.priority desc, c.available_at, c.id
        limit lim;
        return;
    end if;
    if queues is null then
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
            union all
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
        ) as c
        order by c.priority desc, c.available_at, c.id
        limit lim;
    elsif cardinality(queues) = 1 then
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
            union all
            select a.id, a.category, a.priority, a.available_at from (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = queues[1] and j.queue >= queues[1] and j.queue <= queues[1]
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as a
        ) as c
        order by c.priority desc, c.available_at, c.id
        limit lim;
    end if;
end
$$;

COMMENT ON FUNCTION queue._scan(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) IS 'Private: the best ready jobs, locked SKIP LOCKED, by partial index.';

CREATE FUNCTION queue._scan_queues(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) RETURNS TABLE(id bigint, category text, priority integer, available_at timestamp with time zone)
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    if cardinality(exclude_categories) > 0 then
        -- (the gated jobs per category, from queue._gated_scan; round-robin as below)
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select b.id, b.category, b.priority, b.available_at, q.name as queue
            from (select distinct q.name from unnest(queues) as q (name)) as q
            cross join lateral (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as b
            union all
            select g.id, g.category, g.priority, g.available_at,
                case when cardinality(queues) = 1 then queues[1]
                     else (select j.queue from queue.jobs as j where j.id = g.id) end
            from queue._gated_scan(queues, lim, exclude_categories, exclude_ids) as g
        ) as c
        order by c.priority desc,
            row_number() over (
                partition by c.queue, c.priority order by c.available_at, c.id),
            random()
        limit lim;
    else
        -- Several queues share the batch fairly: within a priority level, round-robin over
        -- the queues with ready jobs (each queue's best, then each one's second best, ...;
        -- within a round the queues come in random order, so batches of one alternate too).
        -- A higher priority still goes first, and each queue keeps its own order.
        return query
        select c.id, c.category, c.priority, c.available_at from (
            select b.id, b.category, b.priority, b.available_at, q.name as queue
            from (select distinct q.name from unnest(queues) as q (name)) as q
            cross join lateral (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.category is null and j.available_at <= now()
                  and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as b
            union all
            select b.id, b.category, b.priority, b.available_at, q.name
            from (select distinct q.name from unnest(queues) as q (name)) as q
            cross join lateral (
                select j.id, j.category, j.priority, j.available_at from queue.jobs as j
                where j.queue = q.name
                  and j.status = 'pending' and j.category is not null
                  and j.available_at <= now()
                  and j.category <> all (exclude_categories) and j.id <> all (exclude_ids)
                order by j.priority desc, j.available_at, j.id
                limit lim
                for update skip locked
            ) as b
        ) as c
        order by c.priority desc,
            row_number() over (
                partition by c.queue, c.priority order by c.available_at, c.id),
            random()
        limit lim;
    end if;
end
$$;

COMMENT ON FUNCTION queue._scan_queues(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) IS 'Private: queue._scan of listed queues, each read on its own, sharing the batch round-robin.';

CREATE FUNCTION queue._set_partition(k integer, n integer) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_seq text := pg_get_serial_sequence('queue.jobs', 'id');
    v_max bigint;
    v_next bigint;
    v_now record;
    v_used bigint;
begin
    if k is null or n is null then
        raise exception 'queue._set_partition: k and n must not be null'
            using errcode = '22004';
    end if;
    if n < 1 or n > 1048576 or (n & (n - 1)) <> 0 then
        raise exception 'queue._set_partition: the partition count must be a power of two, got %',
            n using errcode = '22023', hint = 'PL/Proxy hashes with (hash & (n - 1)): use 1, 2, 4, 8, ...';
    end if;
    if k < 0 or k >= n then
        raise exception 'queue._set_partition: partition % is outside [0, %)', k, n
            using errcode = '22023';
    end if;
    lock table queue.jobs in share row exclusive mode;  -- no id drawn while we renumber
    if exists (select from queue.jobs as j where j.id % n <> k) then
        raise exception 'queue._set_partition: live jobs have ids of another partition than % of %',
            k, n using errcode = '55000',
            hint = 'finish or move those jobs first; the router routes a job id to partition id % n';
    end if;
    select s.seqincrement as increment_by into v_now from pg_sequence as s
    where s.seqrelid = v_seq::regclass;
    execute format('select last_value - (not is_called)::int from %s', v_seq) into v_used;
    v_max := greatest(
        (select max(j.id) from queue.jobs as j),
        (select max(d.job_id) from queue.dead_letters as d),
        (select max(h.job_id) from queue.history as h),
        v_used, 0);
    v_next := v_max + 1 + ((k - (v_max + 1) % n) % n + n) % n;
    if v_now.increment_by = n and obj_description(v_seq::regclass, 'pg_class')
        = format('andal partition %s of %s', k, n) then
        return v_next;  -- already so: nothing to change
    end if;
    execute format('alter sequence %s increment by %s restart with %s', v_seq, n, v_next);
    execute format('comment on sequence %s is %L', v_seq, format('andal partition %s of %s', k, n));
    return v_next;
end
$$;

COMMENT ON FUNCTION queue._set_partition(k integer, n integer) IS 'Make this database partition k of n for the router: job ids = k (mod n) from now on.';

CREATE FUNCTION queue._settle(job_id bigint, queue_name text, category_name text, outcome text, claimed_at timestamp with time zone, available_at timestamp with time zone, cache_key text DEFAULT NULL::text, result jsonb DEFAULT NULL::jsonb, ready_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform queue._settle_many(array[job_id], array[outcome], array[queue_name],
        array[category_name], array[claimed_at], array[available_at], array[cache_key],
        array[result], array[ready_at]);
end
$$;

CREATE FUNCTION queue._settle_counted(outcomes text[], queues text[], categories text[], claimed_ats timestamp with time zone[], available_ats timestamp with time zone[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_now timestamptz := queue._lease_clock();
    v_row record;
begin
    if cardinality(outcomes) = 1 then  -- one attempt (fail, release, cancel): no grouping
        if claimed_ats[1] is not null and outcomes[1] in ('completed', 'retry', 'dead') then
            perform queue._record(queues[1], categories[1], (outcomes[1] = 'completed')::int,
                (outcomes[1] = 'retry')::int, (outcomes[1] = 'dead')::int,
                array[date_part('epoch', v_now - claimed_ats[1]) * 1000],
                array[date_part('epoch', claimed_ats[1] - available_ats[1]) * 1000]);
        end if;
        return;
    end if;
    for v_row in
        select u.q, u.c, count(*) filter (where u.o = 'completed')::int as completed,
            count(*) filter (where u.o = 'retry')::int as retried,
            count(*) filter (where u.o = 'dead')::int as dead,
            array_agg(date_part('epoch', v_now - u.at) * 1000) as run_ms,
            array_agg(date_part('epoch', u.at - u.av) * 1000) as wait_ms
        from unnest(outcomes, queues, categories, claimed_ats, available_ats)
            as u (o, q, c, at, av)
        where u.at is not null and u.o in ('completed', 'retry', 'dead')
        group by u.q, u.c
    loop
        perform queue._record(v_row.q, v_row.c, v_row.completed, v_row.retried, v_row.dead,
            v_row.run_ms, v_row.wait_ms);
    end loop;
end
$$;

CREATE FUNCTION queue._settle_many(job_ids bigint[], outcomes text[], queues text[], categories text[], claimed_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], available_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], cache_keys text[] DEFAULT NULL::text[], results jsonb[] DEFAULT NULL::jsonb[], ready_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], counted boolean DEFAULT false) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_ids bigint[];
    v_queues text[];
    v_row record;
begin
    if cardinality(categories) > 0 and array_position(categories, null) is null then
        -- every job has one (a gated batch): no query to pick them
        perform queue._free_slots(job_ids, queues);
    elsif array_remove(categories, null) <> '{}' then
        select array_agg(u.id), array_agg(u.q) into v_ids, v_queues
        from unnest(job_ids, queues, categories) as u (id, q, c) where u.c is not null;
        perform queue._free_slots(v_ids, v_queues);
    end if;
    if not counted and array_remove(claimed_ats, null) <> '{}' then
        perform queue._settle_counted(outcomes, queues, categories, claimed_ats, available_ats);
    end if;
    if array_remove(cache_keys, null) <> '{}' then
        for v_row in
            select u.k, u.q, u.r, u.o from unnest(cache_keys, queues, results, outcomes)
                as u (k, q, r, o)
            where u.k is not null and u.o <> 'released'
            order by u.k
        loop
            perform cache._job_done(v_row.k,
                coalesce((queue._config(v_row.q)).cache_policy, 'invalidate'), v_row.r,
                case v_row.o when 'completed' then 'completed' when 'retry' then 'retry'
                    else 'dead' end);
        end loop;
    end if;
    if cardinality(ready_ats) = 1 then  -- one job: no query
        if ready_ats[1] <= now() then
            perform queue._notify_ready(queues[1]);
        end if;
    elsif array_remove(ready_ats, null) <> '{}' then
        for v_row in
            select distinct u.q from unnest(queues, ready_ats) as u (q, r) where u.r <= now()
        loop
            perform queue._notify_ready(v_row.q);
        end loop;
    end if;
end
$$;

CREATE FUNCTION queue._sleep(keys integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if keys is null then
        update queue.sleepers as s set sleeping = false
        where s.pid = pg_backend_pid() and s.sleeping;
        return;
    end if;
    delete from queue.sleepers as s
    where (s.pid = pg_backend_pid() and s.key <> all (_sleep.keys))
        or not exists (select from pg_stat_activity as a where a.pid = s.pid);
    insert into queue.sleepers as s (key, pid, sleeping)
    select distinct k.key, pg_backend_pid(), true from unnest(_sleep.keys) as k (key)
    on conflict (key, pid) do update set sleeping = true where not s.sleeping;
end
$$;

CREATE FUNCTION queue._stats_rollup() RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_before timestamptz := date_trunc('minute', now()) - interval '5 minutes';
    v_rows bigint;
    v_locks bigint;
begin
    with gone as (
        delete from queue.stat_minutes as s
        where s.minute < v_before and s.backend <> 0
        returning s.*
    ),
    merged as (
        select g.minute, g.queue, g.category, sum(g.completed)::bigint as completed,
            sum(g.retried)::bigint as retried, sum(g.dead)::bigint as dead,
            sum(g.run_count)::bigint as run_count, sum(g.run_ms) as run_ms,
            array(select sum(u.h)::bigint from gone as h2
                  cross join unnest(h2.run_hist) with ordinality as u (h, i)
                  where h2.minute = g.minute and h2.queue = g.queue
                    and h2.category = g.category
                  group by u.i order by u.i) as run_hist,
            array(select sum(u.h)::bigint from gone as h2
                  cross join unnest(h2.wait_hist) with ordinality as u (h, i)
                  where h2.minute = g.minute and h2.queue = g.queue
                    and h2.category = g.category
                  group by u.i order by u.i) as wait_hist
        from gone as g
        group by g.minute, g.queue, g.category
    )
    insert into queue.stat_minutes as s (
        minute, backend, queue, category, completed, retried, dead, run_count, run_ms,
        run_hist, wait_hist
    )
    select m.minute, 0, m.queue, m.category, m.completed, m.retried, m.dead, m.run_count,
        m.run_ms, m.run_hist, m.wait_hist
    from merged as m
    on conflict (minute, backend, queue, category) do update
    set completed = s.completed + excluded.completed,
        retried = s.retried + excluded.retried,
        dead = s.dead + excluded.dead,
        run_count = s.run_count + excluded.run_count,
        run_ms = s.run_ms + excluded.run_ms,
        run_hist = array(select u.a + u.b from unnest(s.run_hist, excluded.run_hist) as u (a, b)),
        wait_hist = array(select u.a + u.b from unnest(s.wait_hist, excluded.wait_hist) as u (a, b));
    get diagnostics v_rows = row_count;
    with gone as (
        delete from queue.lock_stats as s
        where s.minute < v_before and s.backend <> 0
        returning s.*
    )
    insert into queue.lock_stats as s (
        minute, backend, category_id, attempts, failures, rate_refusals
    )
    select g.minute, 0, g.category_id, sum(g.attempts), sum(g.failures), sum(g.rate_refusals)
    from gone as g
    group by g.minute, g.category_id
    on conflict (minute, backend, category_id) do update
    set attempts = s.attempts + excluded.attempts, failures = s.failures + excluded.failures,
        rate_refusals = s.rate_refusals + excluded.rate_refusals;
    get diagnostics v_locks = row_count;
    return v_rows + v_locks;
end
$$;

CREATE FUNCTION queue._unpaused_queues(queues text[], batch integer) RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_paused text[] := array(select p.queue from queue.queues as p where p.paused);
    v_head int := 4 * batch + 16;
    v_u record;  -- the ungated head: its size, and the batch-th job of a queue not paused
    v_g record;  -- the gated head: its size and its last job
begin
    if queues is not null then
        return array(select distinct q.name from unnest(queues) as q (name)
                     where q.name <> all (v_paused) order by q.name);
    end if;
    select count(*) as n, (array_agg(h.k order by h.k)
            filter (where h.queue <> all (v_paused)))[batch] as bar,
        array_agg(distinct h.queue) filter (where h.queue <> all (v_paused)) as open
    into v_u
    from (select j.queue, row(- j.priority, j.available_at, j.id) as k
          from queue.jobs as j
          where j.status = 'pending' and j.category is null and j.available_at <= now()
          order by j.priority desc, j.available_at, j.id
          limit v_head) as h;
    select count(*) as n, (array_agg(h.k order by h.k desc))[1] as last,
        array_agg(distinct h.queue) filter (where h.queue <> all (v_paused)) as open
    into v_g
    from (select j.queue, row(- j.priority, j.available_at, j.id) as k
          from queue.jobs as j
          where j.status = 'pending' and j.category is not null and j.available_at <= now()
          order by j.priority desc, j.available_at, j.id
          limit v_head) as h;
    if (v_u.n < v_head and v_g.n < v_head)
        or (v_u.bar is not null and (v_g.n < v_head or v_g.last > v_u.bar)) then
        return array(select distinct q.name
                     from unnest(coalesce(v_u.open, '{}') || coalesce(v_g.open, '{}')) as q (name)
                     order by q.name);
    end if;
    return array(select p.queue from queue._pending_queues() as p (queue)
                 where p.queue <> all (v_paused) order by p.queue);
end
$$;

COMMENT ON FUNCTION queue._unpaused_queues(queues text[], batch integer) IS 'Private: the queues a claim may take jobs from while some queue is paused.';

CREATE FUNCTION queue._workflow_cancel(child_id bigint, parent_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_job record;
begin
    select j.id, j.queue, j.category, j.cache_key, j.errors into v_job
    from queue.jobs as j where j.id = child_id and j.status = 'waiting' for update;
    if v_job.id is null then
        return;
    end if;
    perform queue._bury(v_job.id, 'parent_failed',
        format('parent job %s ended dead or cancelled', parent_id), v_job.errors);
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'cancelled', null, null,
        v_job.cache_key);
end
$$;

CREATE FUNCTION queue._workflow_check(after bigint[], on_parent_failure text) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_ids bigint[];
    v_last bigint;
    v_called boolean;
    v_bad bigint;
begin
    if on_parent_failure is null or on_parent_failure not in ('cancel', 'run') then
        raise exception 'on_parent_failure must be ''cancel'' or ''run'' (got %)',
            coalesce(on_parent_failure, 'null') using errcode = '22023';
    end if;
    if array_ndims(after) > 1 then
        raise exception 'after must be a one-dimensional array of job ids'
            using errcode = '22023';
    end if;
    if array_position(after, null) is not null then
        raise exception 'after must not contain null' using errcode = '22004';
    end if;
    v_ids := array(select distinct u.id from unnest(after) as u (id) order by u.id);
    if cardinality(v_ids) > 100000 then
        raise exception 'after names % jobs, over the limit of 100000', cardinality(v_ids)
            using errcode = '22023';
    end if;
    execute format('select last_value, is_called from %s',
        pg_get_serial_sequence('queue.jobs', 'id')) into v_last, v_called;
    if not v_called then
        v_last := v_last - 1;
    end if;
    select u.id into v_bad from unnest(v_ids) as u (id)
    where u.id < 1 or u.id > v_last order by u.id limit 1;
    if v_bad is not null then
        raise exception 'after names job %, which andal never issued', v_bad
            using errcode = '22023',
            hint = 'Name jobs created before this one (their ids, as enqueue returned them).';
    end if;
    return v_ids;
end
$$;

CREATE FUNCTION queue._workflow_count_down(ids bigint[], queues text[], ns integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_queues text[];
begin
    perform from queue.jobs as j
    where j.id = any (ids) and j.status = 'waiting'
    order by j.id for no key update;
    with released as (
        update queue.jobs as j
        set waiting_on = j.waiting_on - w.n,
            status = case when j.waiting_on <= w.n then 'pending' else j.status end,
            available_at = case when j.waiting_on <= w.n
                then greatest(j.available_at, now()) else j.available_at end
        from unnest(ids, queues, ns) as w (id, queue, n)
        where j.id = w.id and (w.queue is null or j.queue = w.queue) and j.status = 'waiting'
        returning j.queue, j.status, j.available_at
    )
    select array_agg(distinct r.queue) filter (where r.status = 'pending'
        and r.available_at <= now()) into v_queues from released as r;
    for v_i in 1 .. coalesce(cardinality(v_queues), 0) loop
        perform queue._notify_ready(v_queues[v_i]);
    end loop;
end
$$;

CREATE FUNCTION queue._workflow_ended(parents bigint[], children bigint[], reason text, results jsonb[] DEFAULT NULL::jsonb[], only_children bigint[] DEFAULT NULL::bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_failed boolean := reason <> 'completed';
    v_closed record;
begin
    if children is not null and reason <> 'parent_failed' then
        perform queue._workflow_forget(children);
    end if;
    if parents is null then
        return;
    end if;
    -- the end of each parent is kept for its children: a result, or a failure (a completion
    -- without a result keeps nothing: queue.parent_results tells it from its absence)
    if v_failed or cardinality(array_remove(results, null)) > 0 then
        perform queue._workflow_keep(parents, reason, results);
    end if;
    -- per child: how many of its parents ended (an only child from the parent's row, a
    -- completion's; the others from the edges), whether to cancel it
    with closed as (
        select u.child as child_id, null::text as child_queue, 'run' as on_parent_failure,
            u.id as parent_id
        from unnest(parents, only_children) as u (id, child)
        where u.child is not null and not v_failed
        union all
        select e.child_id, e.child_queue, e.on_parent_failure, e.parent_id
        from queue.job_edges as e
        where e.parent_id = any (array(
            select u.id from unnest(parents, coalesce(only_children, '{}')) as u (id, child)
            where u.child is null or v_failed))
    )
    select array_agg(c.child_id order by c.child_id) as ids,
        array_agg(c.child_queue order by c.child_id) as queues,
        array_agg(c.n order by c.child_id) as ns,
        array_agg(c.parent_id order by c.child_id) filter (where c.cancel) as cancel_parents,
        array_agg(c.child_id order by c.child_id) filter (where c.cancel) as cancel_ids
    into v_closed
    from (
        -- one row per child (an only child has no queue here: the edges' one, when read)
        select c.child_id, max(c.child_queue) as child_queue, count(*)::int as n,
            min(c.parent_id) as parent_id,
            v_failed and bool_or(c.on_parent_failure = 'cancel') as cancel
        from closed as c group by c.child_id
    ) as c;
    for v_i in 1 .. coalesce(cardinality(v_closed.cancel_ids), 0) loop
        perform queue._workflow_cancel(v_closed.cancel_ids[v_i], v_closed.cancel_parents[v_i]);
    end loop;
    if v_closed.ids is not null then
        perform queue._workflow_count_down(v_closed.ids, v_closed.queues, v_closed.ns);
    end if;
end
$$;

CREATE FUNCTION queue._workflow_forget(children bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_gone bigint[];
begin
    with gone as (
        delete from queue.job_edges as e where e.child_id = any (children)
        returning e.parent_id
    )
    select array_agg(distinct g.parent_id) into v_gone from gone as g;
    if v_gone is not null then
        delete from queue.workflow_results as r
        where r.job_id = any (v_gone)
          and not exists (select from queue.job_edges as e where e.parent_id = r.job_id);
    end if;
end
$$;

CREATE FUNCTION queue._workflow_keep(parents bigint[], reason text, results jsonb[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_limit int := (queue._limits()).max_result_bytes;
begin
    insert into queue.workflow_results as r (job_id, state, result)
    select u.id,
        case when reason = 'completed' then 'completed' else queue._ended_state(reason) end,
        case when octet_length(u.result::text) > v_limit
            then queue._check_result(u.result, 'result') else u.result end
    from unnest(parents, coalesce(results, '{}')) as u (id, result)
    where u.id is not null and (reason <> 'completed' or u.result is not null)
    on conflict (job_id) do update set state = excluded.state, result = excluded.result,
        finished_at = excluded.finished_at;
end
$$;

CREATE FUNCTION queue._workflow_requeue(job_id bigint) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_frontier bigint[] := array[job_id];
    v_back bigint[];
    v_count int := 0;
begin
    update queue.jobs as j set workflow = true where j.id = job_id;
    loop
        update queue.jobs as j set waiting_on = j.waiting_on + c.n
        from (select e.child_id, count(*)::int as n from queue.job_edges as e
              where e.parent_id = any (v_frontier) group by e.child_id) as c
        where j.id = c.child_id and j.status = 'waiting';
        v_back := array(
            select distinct e.child_id from queue.job_edges as e
            join queue.dead_letters as d on d.job_id = e.child_id and d.reason = 'parent_failed'
            where e.parent_id = any (v_frontier)
              and not exists (
                  select from queue.job_edges as o
                  join queue.dead_letters as f on f.job_id = o.parent_id
                  where o.child_id = e.child_id and o.on_parent_failure = 'cancel')
            order by 1);
        exit when cardinality(v_back) = 0;
        perform queue._workflow_revive(v_back);
        v_count := v_count + cardinality(v_back);
        v_frontier := v_back;
    end loop;
    return v_count;
end
$$;

CREATE FUNCTION queue._workflow_revive(job_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    with back as (
        delete from queue.dead_letters as d where d.job_id = any (job_ids) returning d.*
    )
    insert into queue.jobs (
        id, queue, category, priority, payload, attempt, max_attempts, enqueued_at, errors,
        cache_key, status, workflow, has_parents
    ) overriding system value
    select b.job_id, b.queue, b.category, b.priority, b.payload, 0, b.max_attempts,
        b.enqueued_at, b.errors, b.cache_key, 'waiting', true, true
    from back as b;
    perform from queue.jobs as j
    where j.id in (select e.parent_id from queue.job_edges as e where e.child_id = any (job_ids))
    order by j.id for key share;
    update queue.jobs as j set workflow = true
    where j.id in (select e.parent_id from queue.job_edges as e where e.child_id = any (job_ids))
      and not j.workflow;
    update queue.jobs as j
    set waiting_on = c.n, status = case when c.n = 0 then 'pending' else 'waiting' end
    from (select e.child_id,
              count(*) filter (where exists (
                  select from queue.jobs as p where p.id = e.parent_id))::int as n
          from queue.job_edges as e where e.child_id = any (job_ids)
          group by e.child_id) as c
    where j.id = c.child_id;
end
$$;

CREATE FUNCTION queue._workflow_sweep() RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_count bigint;
begin
    delete from queue.workflow_results as r
    where not exists (select from queue.job_edges as e where e.parent_id = r.job_id);
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

CREATE FUNCTION queue._workflow_wait(job_ids bigint[], job_queue text, parents bigint[], on_parent_failure text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_live bigint[];
    v_failed bigint;
    v_child bigint;
begin
    if cardinality(parents) = 0 or cardinality(job_ids) = 0 then
        return;
    end if;
    v_live := array(
        select l.id from (
            select j.id from queue.jobs as j where j.id = any (parents)
            order by j.id for key share
        ) as l
    );
    select d.job_id into v_failed from queue.dead_letters as d
    where d.job_id = any (parents) and not d.job_id = any (v_live)
    order by d.job_id limit 1;
    -- the live parents are marked as having children (their end counts them down), in id
    -- order; a parent's first child is its only child (read from its row at its
    -- completion), a second one makes it read its edges
    update queue.jobs as j
    set workflow = true,
        only_child = case when not j.workflow and cardinality(job_ids) = 1 then job_ids[1] end
    where j.id in (
        select p.id from queue.jobs as p
        where p.id = any (v_live) and (not p.workflow or p.only_child is not null)
        order by p.id for no key update
    );
    -- a child waits while a parent is live, and until it is cancelled just below
    update queue.jobs as j
    set has_parents = true, waiting_on = cardinality(v_live),
        status = case when cardinality(v_live) > 0
            or (v_failed is not null and on_parent_failure = 'cancel')
            then 'waiting' else j.status end
    where j.id = any (job_ids) and j.queue = job_queue;
    insert into queue.job_edges (parent_id, child_id, child_queue, on_parent_failure)
    select p.id, c.id, job_queue, on_parent_failure
    from unnest(parents) as p (id) cross join unnest(job_ids) as c (id);
    if v_failed is not null and on_parent_failure = 'cancel' then
        foreach v_child in array job_ids loop
            perform queue._workflow_cancel(v_child, v_failed);
        end loop;
    end if;
end
$$;

CREATE FUNCTION queue.busy() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform queue._sleep(null);
end
$$;

COMMENT ON FUNCTION queue.busy() IS 'Say that this session no longer sleeps: producers stop hinting for it while it works.';

CREATE FUNCTION queue.cancel(job_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_job record;
begin
    if cancel.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    select j.* into v_job from queue.jobs as j where j.id = cancel.job_id for update;
    if v_job.id is null then
        -- Its dead letter locked: a queue.requeue_dead in flight (it deletes the dead letter
        -- and inserts the job) is waited for; when it commits, the job is live again and is
        -- cancelled as such, never answered with a stale "already dead".
        perform from queue.dead_letters as d where d.job_id = cancel.job_id for update;
        if found then
            raise exception 'job % is already dead', cancel.job_id using errcode = '55000';
        end if;
        select j.* into v_job from queue.jobs as j where j.id = cancel.job_id for update;
    end if;
    if v_job.id is null then
        raise exception 'job % does not exist (or has completed)', cancel.job_id
            using errcode = '42704';
    end if;
    if v_job.status = 'running' then
        if v_job.abort_requested_at is null then
            update queue.jobs as j set abort_requested_at = now() where j.id = v_job.id;
            perform queue._notify('andal_abort',
                json_build_object('job_id', v_job.id, 'worker', v_job.worker)::text, '{}');
        end if;
        return;
    end if;
    perform queue._bury(v_job.id, 'cancelled', 'cancelled', v_job.errors);
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'cancelled', null, null,
        v_job.cache_key);
end
$$;

COMMENT ON FUNCTION queue.cancel(job_id bigint) IS 'Withdraw a pending job (into the dead letters), or ask a running job''s worker to stop it.';

CREATE FUNCTION queue.category_limits() RETURNS TABLE(category text, max_running integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select c.category, c.max_running from queue.categories as c order by c.category
$$;

COMMENT ON FUNCTION queue.category_limits() IS 'Every known category and its limit (max_running; 0: paused).';

CREATE FUNCTION queue.child_jobs(job_id bigint) RETURNS TABLE(child_id bigint, state text, open boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
begin
    if child_jobs.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return query
    select e.child_id, k.state,
        k.state = 'waiting' and exists (select from queue.jobs as p where p.id = e.parent_id)
    from queue.job_edges as e
    left join lateral (select x.state from queue.job(e.child_id) as x) as k on true
    where e.parent_id = child_jobs.job_id
    order by e.child_id;
end
$$;

COMMENT ON FUNCTION queue.child_jobs(job_id bigint) IS 'The children of a job: id, state, and whether each still waits for it.';

CREATE FUNCTION queue.claim(worker text, queues text[] DEFAULT NULL::text[], batch integer DEFAULT 1, lease interval DEFAULT NULL::interval) RETURNS TABLE(job_id bigint, queue text, category text, priority integer, payload jsonb, attempt integer, max_attempts integer, token uuid, lease_expires_at timestamp with time zone, enqueued_at timestamp with time zone, cache_key text, cache_version bigint)
    LANGUAGE plpgsql SECURITY DEFINER ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query
    select c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version
    from queue._claim(claim.worker, claim.queues, claim.batch, claim.lease) as c;
end
$$;

COMMENT ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval) IS 'Lease up to batch ready jobs to a worker (SKIP LOCKED, category-gated, fenced by a token).';

CREATE FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval, deadlines boolean) RETURNS TABLE(job_id bigint, queue text, category text, priority integer, payload jsonb, attempt integer, max_attempts integer, token uuid, lease_expires_at timestamp with time zone, enqueued_at timestamp with time zone, cache_key text, cache_version bigint, deadline timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    if claim.deadlines is null then
        raise exception 'deadlines must not be null' using errcode = '22004';
    end if;
    return query
    select c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version,
        case when claim.deadlines then c.deadline end
    from queue._claim(claim.worker, claim.queues, claim.batch, claim.lease) as c;
end
$$;

COMMENT ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval, deadlines boolean) IS 'queue.claim, each job with its attempt''s deadline (claim time + timeout).';

CREATE FUNCTION queue.complete(job_id bigint, token uuid, result jsonb DEFAULT NULL::jsonb) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_job record;
    v_now timestamptz := queue._lease_clock();
begin
    if complete.job_id is null or complete.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.complete');
    end if;
    -- By primary key, never a scan of the running jobs (as complete_many): a token is set
    -- only while a job runs, so token and unexpired lease say "running" without naming the
    -- status, which would let the planner read jobs_lease_idx on stale statistics.
    with gone as (
        delete from queue.jobs as j
        where j.id = complete.job_id and j.token = complete.token
          and j.lease_expires_at > v_now and j.abort_requested_at is null
        returning j.id, j.queue, j.category, j.cache_key, j.priority, j.payload, j.attempt,
            j.max_attempts, j.enqueued_at, j.claimed_at, j.worker, j.errors, j.watched,
            j.workflow, j.has_parents, j.only_child,
            date_part('epoch', v_now - j.claimed_at) * 1000 as run_ms,
            width_bucket(date_part('epoch', v_now - j.claimed_at) * 1000,
                queue._hist_bounds())
            + 1 as rb,
            width_bucket(date_part('epoch', j.claimed_at - j.available_at) * 1000,
                queue._hist_bounds())
            + 1 as wb
    )
    select g.*, q.keep_results, q.history_retention into v_job
    from gone as g
    left join queue.queues as q on q.queue = g.queue;
    if v_job.id is null then
        perform queue._lease_lost(complete.job_id, complete.token);
    end if;
    -- Counted in this backend's row of the minute, queue and category: an update by primary
    -- key (a HOT update, one WAL record) and queue._count_completed's upsert only when the
    -- row does not exist yet (once a minute). Its call every time cost ≈ 10 µs, 5 % of a
    -- claim + complete at batch 1; the job's buckets get a 1 (queue._hist_bounds).
    update queue.stat_minutes as s
    set completed = s.completed + 1, run_count = s.run_count + 1,
        run_ms = s.run_ms + v_job.run_ms, run_hist[v_job.rb] = s.run_hist[v_job.rb] + 1,
        wait_hist[v_job.wb] = s.wait_hist[v_job.wb] + 1
    where s.minute = date_trunc('minute', now()) and s.backend = pg_backend_pid()
      and s.queue = v_job.queue and s.category = coalesce(v_job.category, '');
    if not found then
        perform queue._count_completed(array[v_job.queue], array[v_job.category],
            array[v_job.run_ms], array[v_job.rb], array[v_job.wb]);
    end if;
    if v_job.history_retention is not null then  -- the object of complete_many's history aggregate
        perform queue._history_completed(jsonb_build_array(jsonb_build_object(
            'job_id', v_job.id, 'queue', v_job.queue, 'category', v_job.category,
            'priority', v_job.priority, 'payload', v_job.payload, 'attempt', v_job.attempt,
            'max_attempts', v_job.max_attempts, 'enqueued_at', v_job.enqueued_at,
            'started_at', v_job.claimed_at, 'worker', v_job.worker,
            'result', queue._check_result(complete.result, 'result'), 'errors', v_job.errors)),
            v_now);
    end if;
    perform queue._record_completions(array[v_job.id], array[v_job.queue],
        int8range(v_job.id, v_job.id, '[]'), v_now);
    delete from queue.watches as w where w.job_id = v_job.id;  -- queue.watch's row
    if v_job.watched or found then
        perform queue._notify('andal_done', v_job.id::text);
    end if;
    if v_job.keep_results then
        insert into queue.results (job_id, queue, result, completed_at)
        values (v_job.id, v_job.queue, queue._check_result(complete.result, 'result'), v_now);
    end if;
    if v_job.category is not null or v_job.cache_key is not null then  -- the slot, the cache
        perform queue._settle_many(array[v_job.id], array['completed'], array[v_job.queue],
            array[v_job.category], cache_keys => array[v_job.cache_key],
            results => array[complete.result], counted => true);
    end if;
    if v_job.workflow or v_job.has_parents then  -- children or parents (_workflow_ended)
        perform queue._workflow_ended(case when v_job.workflow then array[v_job.id] end,
            case when v_job.has_parents then array[v_job.id] end, 'completed',
            array[complete.result], array[v_job.only_child]);
    end if;
end
$$;

COMMENT ON FUNCTION queue.complete(job_id bigint, token uuid, result jsonb) IS 'Finish a claimed job (fenced by its token); the job leaves the live table.';

CREATE FUNCTION queue.complete_many(job_ids bigint[], tokens uuid[], results jsonb[] DEFAULT NULL::jsonb[]) RETURNS TABLE(job_id bigint, completed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_done record;  -- the completed jobs (queue._complete_delete)
    v_watched bigint[];
    v_now timestamptz := queue._lease_clock();
begin
    if complete_many.job_ids is null or complete_many.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.complete_many');
    end if;
    if cardinality(complete_many.job_ids) <> cardinality(complete_many.tokens)
        or (complete_many.results is not null
            and cardinality(complete_many.results) <> cardinality(complete_many.job_ids)) then
        raise exception 'job_ids, tokens and results must have the same length'
            using errcode = '22023';
    end if;

    -- One job (a worker at batch 1): queue.complete's direct path (queue._complete_one);
    -- the set-based statement below costs about five times as much for a single row.
    if cardinality(complete_many.job_ids) = 1 and complete_many.job_ids[1] is not null
        and complete_many.tokens[1] is not null then
        return query select complete_many.job_ids[1], queue._complete_one(
            complete_many.job_ids[1], complete_many.tokens[1], complete_many.results[1]);
        return;
    end if;

    v_done := queue._complete_delete(complete_many.job_ids, complete_many.tokens,
        complete_many.results, v_now);
    if v_done.ids is not null then
        if v_done.settle then  -- the slots, the cache (the statistics are counted here)
            perform queue._settle_many(v_done.ids,
                array_fill('completed'::text, array[cardinality(v_done.ids)]), v_done.queues,
                v_done.categories, cache_keys => v_done.cache_keys, results => v_done.results,
                counted => true);
        end if;
        perform queue._count_completed(v_done.queues, v_done.categories, v_done.run_ms,
            v_done.run_buckets, v_done.wait_buckets);
        perform queue._record_completions(v_done.ids, v_done.queues, v_done.span, v_now);
    end if;
    if v_done.history is not null then
        perform queue._history_completed(v_done.history, v_now);
    end if;
    with w as (
        delete from queue.watches as w where w.job_id = any (v_done.ids) returning w.job_id
    )
    select v_done.watched || array_agg(w.job_id) from w into v_watched;  -- queue.watch's rows
    for v_i in 1 .. coalesce(cardinality(v_watched), 0) loop
        perform queue._notify('andal_done', v_watched[v_i]::text);
    end loop;
    if v_done.flow is not null or v_done.flow_children is not null then  -- (_workflow_ended)
        perform queue._workflow_ended(v_done.flow, v_done.flow_children, 'completed',
            v_done.flow_results, v_done.flow_only);
    end if;

    -- One row per input pair, in input order. A pair with a null id or token matches
    -- nothing: null, or false when no job was completed.
    return query
    select i.id,
        case when i.id is not null and i.tok is not null then d.id is not null
             when v_done.ids is null then false end
    from unnest(complete_many.job_ids, complete_many.tokens) with ordinality as i (id, tok, n)
    left join unnest(v_done.ids, v_done.toks) as d (id, tok) on d.id = i.id and d.tok = i.tok
    order by i.n;
end
$$;

COMMENT ON FUNCTION queue.complete_many(job_ids bigint[], tokens uuid[], results jsonb[]) IS 'Complete several claimed jobs; returns completed = false where the lease was lost.';

CREATE FUNCTION queue.complete_many_outcomes(job_ids bigint[], tokens uuid[], results jsonb[] DEFAULT NULL::jsonb[]) RETURNS TABLE(job_id bigint, completed boolean, refused text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query
    select c.job_id, c.completed,
        case when not c.completed then queue._refusal(c.job_id, t.tok) end
    from queue.complete_many(job_ids => complete_many_outcomes.job_ids,
        tokens => complete_many_outcomes.tokens, results => complete_many_outcomes.results)
        with ordinality as c (job_id, completed, n)
    join unnest(complete_many_outcomes.tokens) with ordinality as t (tok, n) on t.n = c.n
    order by c.n;
end
$$;

COMMENT ON FUNCTION queue.complete_many_outcomes(job_ids bigint[], tokens uuid[], results jsonb[]) IS 'Complete several claimed jobs; returns why each one not completed was refused.';

CREATE FUNCTION queue.complete_many_then_claim(job_ids bigint[], tokens uuid[], results jsonb[], worker text, queues text[], batch integer, lease interval) RETURNS TABLE(claimed boolean, job_id bigint, queue text, category text, priority integer, payload jsonb, attempt integer, max_attempts integer, token uuid, lease_expires_at timestamp with time zone, enqueued_at timestamp with time zone, cache_key text, cache_version bigint, deadline timestamp with time zone, completed boolean)
    LANGUAGE plpgsql SECURITY DEFINER ROWS 20
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    -- validated by the two functions; the claim's isolation check comes first, so a call
    -- at another level changes nothing
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.complete_many_then_claim must run at READ COMMITTED isolation '
            '(not %)', current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'Its claim is queue.claim''s: the category gate recounts running jobs '
            'after taking its lock.';
    end if;
    -- (one job: complete_many's one-job path, queue.complete's)
    return query
    select false, d.job_id, null::text, null::text, null::int, null::jsonb, null::int,
        null::int, null::uuid, null::timestamptz, null::timestamptz, null::text,
        null::bigint, null::timestamptz, d.completed
    from queue.complete_many(job_ids => complete_many_then_claim.job_ids,
        tokens => complete_many_then_claim.tokens,
        results => complete_many_then_claim.results) as d;
    return query
    select true, c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt,
        c.max_attempts, c.token, c.lease_expires_at, c.enqueued_at, c.cache_key,
        c.cache_version, c.deadline, null::boolean
    from queue._claim(complete_many_then_claim.worker, complete_many_then_claim.queues,
        complete_many_then_claim.batch, complete_many_then_claim.lease) as c;
end
$$;

COMMENT ON FUNCTION queue.complete_many_then_claim(job_ids bigint[], tokens uuid[], results jsonb[], worker text, queues text[], batch integer, lease interval) IS 'Complete several claimed jobs, then claim the next ones, in one call.';

CREATE FUNCTION queue.configure_history(partition_width interval) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_interval(configure_history.partition_width, 'partition_width', true);
    if extract(month from configure_history.partition_width) <> 0
        or extract(year from configure_history.partition_width) <> 0 then
        raise exception 'partition_width must be a length of time without months or years '
            '(got %)', configure_history.partition_width
            using errcode = '22023',
            hint = 'Give it in days, hours, minutes or seconds, such as ''30 days''.';
    end if;
    if configure_history.partition_width < interval '1 second' then
        raise exception 'partition_width must be at least 1 second (got %)',
            configure_history.partition_width using errcode = '22023';
    end if;
    insert into queue.history_settings as s (id, partition_width)
    values (true, configure_history.partition_width)
    on conflict (id) do update
    set partition_width = excluded.partition_width, updated_at = now();
end
$$;

COMMENT ON FUNCTION queue.configure_history(partition_width interval) IS 'The width of new history partitions.';

CREATE FUNCTION queue.configure_queue(queue text, max_attempts integer DEFAULT NULL::integer, lease interval DEFAULT NULL::interval, backoff text DEFAULT NULL::text, backoff_base interval DEFAULT NULL::interval, backoff_cap interval DEFAULT NULL::interval, jitter real DEFAULT NULL::real, notify boolean DEFAULT NULL::boolean, payload_limit integer DEFAULT NULL::integer, keep_results boolean DEFAULT NULL::boolean, cache_policy text DEFAULT NULL::text) RETURNS SETOF queue.queues
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query select * from queue._configure_queue(queue, max_attempts, lease, backoff,
        backoff_base, backoff_cap, jitter, notify, payload_limit, keep_results, cache_policy,
        null, null, null);
end
$$;

COMMENT ON FUNCTION queue.configure_queue(queue text, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text) IS 'Set a queue''s policy (null arguments keep the current value).';

CREATE FUNCTION queue.configure_queue(queue text, timeout interval, max_attempts integer DEFAULT NULL::integer, lease interval DEFAULT NULL::interval, backoff text DEFAULT NULL::text, backoff_base interval DEFAULT NULL::interval, backoff_cap interval DEFAULT NULL::interval, jitter real DEFAULT NULL::real, notify boolean DEFAULT NULL::boolean, payload_limit integer DEFAULT NULL::integer, keep_results boolean DEFAULT NULL::boolean, cache_policy text DEFAULT NULL::text, results_retention interval DEFAULT NULL::interval, dead_retention interval DEFAULT NULL::interval) RETURNS SETOF queue.queues
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query select * from queue._configure_queue(queue, max_attempts, lease, backoff,
        backoff_base, backoff_cap, jitter, notify, payload_limit, keep_results, cache_policy,
        timeout, results_retention, dead_retention);
end
$$;

COMMENT ON FUNCTION queue.configure_queue(queue text, timeout interval, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text, results_retention interval, dead_retention interval) IS 'Set a queue''s policy with its job timeout and retention periods.';

CREATE FUNCTION queue.dead_letters_by(queue text DEFAULT NULL::text, reason text DEFAULT NULL::text, before bigint DEFAULT NULL::bigint, lim integer DEFAULT 50) RETURNS SETOF queue.dead_letter_info
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(dead_letters_by.queue, 'queue', false);
    if dead_letters_by.reason is not null
        and dead_letters_by.reason not in ('exhausted', 'non_retryable', 'cancelled') then
        raise exception 'reason must be exhausted, non_retryable or cancelled (got %)',
            dead_letters_by.reason using errcode = '22023';
    end if;
    if dead_letters_by.lim is null or dead_letters_by.lim not between 1 and 1000 then
        raise exception 'lim must be between 1 and 1000 (got %)', dead_letters_by.lim
            using errcode = '22023';
    end if;
    return query
    select d.job_id, d.queue, d.category, d.reason, d.attempt, d.max_attempts, d.enqueued_at,
        d.died_at, left(d.last_error, 2000)
    from queue.dead_letters as d
    where (dead_letters_by.queue is null or d.queue = dead_letters_by.queue)
        and (dead_letters_by.reason is null or d.reason = dead_letters_by.reason)
        and (dead_letters_by.before is null or d.job_id < dead_letters_by.before)
    order by d.job_id desc
    limit dead_letters_by.lim;
end
$$;

COMMENT ON FUNCTION queue.dead_letters_by(queue text, reason text, before bigint, lim integer) IS 'A page of dead letters by queue and reason, newest first, without payloads.';

CREATE FUNCTION queue.enqueue(payload jsonb, queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, dedup_key text DEFAULT NULL::text, cache_key text DEFAULT NULL::text, cache_value jsonb DEFAULT NULL::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    -- The common call (the driver's, the benchmark's) takes the lean body. A null priority
    -- or delay means its default; the delay must be 0 in effect (now() + delay = now(),
    -- tested only on a delay equal to 0 and small enough to add).
    if category is null and dedup_key is null and cache_key is null and cache_value is null
        and max_attempts is null and coalesce(priority, 0) = 0
        and coalesce(delay, interval '0') = interval '0'
        and abs(extract(epoch from coalesce(delay, interval '0'))) < 1e9
        and now() + coalesce(delay, interval '0') = now() then
        return queue._enqueue_lean(payload, queue);
    end if;
    return queue._enqueue(payload, queue, category, priority, delay, max_attempts, dedup_key,
        cache_key, cache_value, null, null);
end
$$;

COMMENT ON FUNCTION queue.enqueue(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) IS 'Add a job; returns its id (or the id of the live job with the same dedup_key).';

CREATE FUNCTION queue.enqueue(payload jsonb, timeout interval, queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, dedup_key text DEFAULT NULL::text, cache_key text DEFAULT NULL::text, cache_value jsonb DEFAULT NULL::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return queue._enqueue(payload, queue, category, priority, delay, max_attempts, dedup_key,
        cache_key, cache_value, timeout, null);
end
$$;

COMMENT ON FUNCTION queue.enqueue(payload jsonb, timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) IS 'Add a job with a timeout (maximum run time of an attempt); returns its id.';

CREATE FUNCTION queue.enqueue(payload jsonb, trace_context jsonb, queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, dedup_key text DEFAULT NULL::text, cache_key text DEFAULT NULL::text, cache_value jsonb DEFAULT NULL::jsonb, timeout interval DEFAULT NULL::interval) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return queue._enqueue(payload, queue, category, priority, delay, max_attempts, dedup_key,
        cache_key, cache_value, timeout, trace_context);
end
$$;

COMMENT ON FUNCTION queue.enqueue(payload jsonb, trace_context jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval) IS 'Add a job carrying the producer''s trace context; returns its id.';

CREATE FUNCTION queue.enqueue(payload jsonb, after bigint[], queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, cache_key text DEFAULT NULL::text, cache_value jsonb DEFAULT NULL::jsonb, timeout interval DEFAULT NULL::interval, trace_context jsonb DEFAULT NULL::jsonb, on_parent_failure text DEFAULT 'cancel'::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_policy text := coalesce(on_parent_failure, 'cancel');
    v_parents bigint[] := queue._workflow_check(coalesce(after, '{}'), v_policy);
    v_id bigint;
begin
    v_id := queue._enqueue(payload, queue, category, priority, delay, max_attempts, null,
        cache_key, cache_value, timeout, trace_context);
    perform queue._workflow_wait(array[v_id], queue, v_parents, v_policy);
    return v_id;
end
$$;

COMMENT ON FUNCTION queue.enqueue(payload jsonb, after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb, on_parent_failure text) IS 'Add a job that waits for the jobs of after to end; returns its id.';

CREATE FUNCTION queue.enqueue_many(payloads jsonb[], queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, dedup_keys text[] DEFAULT NULL::text[]) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, dedup_keys, null);
end
$$;

COMMENT ON FUNCTION queue.enqueue_many(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) IS 'Add many jobs of one queue in one statement; returns their ids in input order.';

CREATE FUNCTION queue.enqueue_many(payloads jsonb[], timeout interval, queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, dedup_keys text[] DEFAULT NULL::text[]) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, dedup_keys, timeout);
end
$$;

COMMENT ON FUNCTION queue.enqueue_many(payloads jsonb[], timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) IS 'Add many jobs of one queue with a timeout each; returns their ids in input order.';

CREATE FUNCTION queue.enqueue_many(payloads jsonb[], after bigint[], queue text DEFAULT 'default'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, delay interval DEFAULT '00:00:00'::interval, max_attempts integer DEFAULT NULL::integer, timeout interval DEFAULT NULL::interval, on_parent_failure text DEFAULT 'cancel'::text) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_policy text := coalesce(on_parent_failure, 'cancel');
    v_parents bigint[] := queue._workflow_check(coalesce(after, '{}'), v_policy);
    v_ids bigint[];
begin
    v_ids := array(select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, null, timeout));
    perform queue._workflow_wait(v_ids, queue, v_parents, v_policy);
    return query select u.id from unnest(v_ids) with ordinality as u (id, n) order by u.n;
end
$$;

COMMENT ON FUNCTION queue.enqueue_many(payloads jsonb[], after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, timeout interval, on_parent_failure text) IS 'Add many jobs of one queue that wait for the jobs of after; returns their ids in order.';

CREATE FUNCTION queue.fail(job_id bigint, token uuid, error text, retry_in interval DEFAULT NULL::interval, retryable boolean DEFAULT true) RETURNS text
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select f.status from queue._fail(job_id, token, error, retry_in, retryable) as f
$$;

COMMENT ON FUNCTION queue.fail(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) IS 'Record a failed attempt: retry with backoff (pending) or dead-letter (dead).';

CREATE FUNCTION queue.fail_outcome(job_id bigint, token uuid, error text, retry_in interval DEFAULT NULL::interval, retryable boolean DEFAULT true) RETURNS TABLE(status text, reason text, available_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER ROWS 1
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select f.status, f.reason, f.available_at
    from queue._fail(job_id, token, error, retry_in, retryable) as f
$$;

COMMENT ON FUNCTION queue.fail_outcome(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) IS 'Record a failed attempt; returns status, reason and the next availability.';

CREATE FUNCTION queue.heartbeat(job_id bigint, token uuid, extend interval DEFAULT NULL::interval) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_expires timestamptz;
begin
    if heartbeat.job_id is null or heartbeat.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    select h.lease_expires_at into v_expires
    from queue._heartbeat_one(heartbeat.job_id, heartbeat.token, heartbeat.extend) as h;
    if v_expires is null then
        perform queue._lease_lost(heartbeat.job_id, heartbeat.token);
    end if;
    return v_expires;
end
$$;

COMMENT ON FUNCTION queue.heartbeat(job_id bigint, token uuid, extend interval) IS 'Extend the lease of a claimed job; raises AN001 when the lease is lost.';

CREATE FUNCTION queue.heartbeat(job_id bigint, token uuid, report_abort boolean, extend interval DEFAULT NULL::interval) RETURNS TABLE(lease_expires_at timestamp with time zone, abort_requested boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_expires timestamptz;
    v_abort boolean;
begin
    if heartbeat.job_id is null or heartbeat.token is null or heartbeat.report_abort is null then
        raise exception 'job_id, token and report_abort must not be null' using errcode = '22004';
    end if;
    select h.lease_expires_at, h.abort_requested into v_expires, v_abort
    from queue._heartbeat_one(heartbeat.job_id, heartbeat.token, heartbeat.extend) as h;
    if v_expires is null then
        perform queue._lease_lost(heartbeat.job_id, heartbeat.token);
    end if;
    return query select v_expires, v_abort;
end
$$;

COMMENT ON FUNCTION queue.heartbeat(job_id bigint, token uuid, report_abort boolean, extend interval) IS 'Extend the lease of a claimed job and report whether its abort was requested.';

CREATE FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], extend interval DEFAULT NULL::interval) RETURNS TABLE(job_id bigint, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
begin
    if heartbeat_many.job_ids is null or heartbeat_many.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if cardinality(heartbeat_many.job_ids) <> cardinality(heartbeat_many.tokens) then
        raise exception 'job_ids and tokens must have the same length' using errcode = '22023';
    end if;
    return query
    select h.job_id, h.lease_expires_at
    from queue._heartbeat(heartbeat_many.job_ids, heartbeat_many.tokens, heartbeat_many.extend)
        as h;
end
$$;

COMMENT ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], extend interval) IS 'Extend several leases; null expiry where the lease was lost.';

CREATE FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], report_abort boolean, extend interval DEFAULT NULL::interval) RETURNS TABLE(job_id bigint, lease_expires_at timestamp with time zone, abort_requested boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
begin
    if heartbeat_many.job_ids is null or heartbeat_many.tokens is null
        or heartbeat_many.report_abort is null then
        raise exception 'job_ids, tokens and report_abort must not be null'
            using errcode = '22004';
    end if;
    if cardinality(heartbeat_many.job_ids) <> cardinality(heartbeat_many.tokens) then
        raise exception 'job_ids and tokens must have the same length' using errcode = '22023';
    end if;
    return query
    select h.job_id, h.lease_expires_at, h.abort_requested
    from queue._heartbeat(heartbeat_many.job_ids, heartbeat_many.tokens, heartbeat_many.extend)
        as h;
end
$$;

COMMENT ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], report_abort boolean, extend interval) IS 'Extend several leases and report requested aborts; null where the lease was lost.';

CREATE FUNCTION queue.idle(queues text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_queue text;
begin
    if idle.queues is not null then
        if cardinality(idle.queues) = 0 then
            raise exception 'queues must not be empty (null means every queue)'
                using errcode = '22023';
        end if;
        foreach v_queue in array idle.queues loop
            perform queue._check_name(v_queue, 'queue');
        end loop;
    end if;
    perform queue._sleep(coalesce(
        (select array_agg(queue._hint_key(q.queue)) from unnest(idle.queues) as q (queue)),
        array[queue._hint_key(null)]));
end
$$;

COMMENT ON FUNCTION queue.idle(queues text[]) IS 'Say that this (listening) session sleeps on queues: their changes hint it until queue.busy.';

CREATE FUNCTION queue.job(job_id bigint) RETURNS SETOF queue.job_info
    LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 1
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
begin
    if job.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return query
    select s.job_id, s.state, s.queue, s.category, s.priority, s.attempts, s.max_attempts,
        s.enqueued_at, s.available_at, s.started_at, s.finished_at, s.worker,
        s.lease_expires_at, s.abort_requested_at, s.result, s.errors, s.kept_until
    from (
        select 1 as src, j.id as job_id,
            queue._live_state(j.status, j.available_at, j.attempt) as state,
            j.queue, j.category, j.priority, j.attempt as attempts, j.max_attempts,
            j.enqueued_at, j.available_at, j.claimed_at as started_at,
            null::timestamptz as finished_at, j.worker, j.lease_expires_at,
            j.abort_requested_at, null::jsonb as result, j.errors,
            null::timestamptz as kept_until
        from queue.jobs as j
        where j.id = job.job_id
        union all
        (select 2, h.job_id, h.state, h.queue, h.category, h.priority, h.attempt,
            h.max_attempts, h.enqueued_at, null, h.started_at, h.finished_at, null, null, null,
            h.result, h.errors, h.keep_until
         from queue.history as h
         where h.job_id = job.job_id
         order by h.finished_seq desc nulls last, h.finished_at desc
         limit 1)
        union all
        select 3, d.job_id,
            queue._ended_state(d.reason),
            d.queue, d.category, d.priority, d.attempt, d.max_attempts, d.enqueued_at, null,
            null, d.died_at, null, null, null, null, d.errors, null
        from queue.dead_letters as d
        where d.job_id = job.job_id
        union all
        select 4, r.job_id, 'completed', r.queue, null, null, null, null, null, null, null,
            r.completed_at, null, null, null, r.result, null, null
        from queue.results as r
        where r.job_id = job.job_id
        union all
        select 5, job.job_id, 'completed', c.queues[array_position(c.ids, job.job_id)], null,
            null, null, null, null, null, null, c.completed_at, null, null, null, null, null,
            c.completed_at + queue._completions_keep()
        from queue.completions as c  -- a job completes once: in one row at most
        where c.span @> job.job_id and job.job_id = any (c.ids)
    ) as s
    order by s.src
    limit 1;
end
$$;

COMMENT ON FUNCTION queue.job(job_id bigint) IS 'One job by id: state, queue, attempts, times, worker, result, error history; no row when unknown.';

CREATE FUNCTION queue.job_origin(job_id bigint) RETURNS TABLE(schedule text, tick timestamp with time zone, cache_key text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 1
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_payload jsonb;
    v_key text;
    v_tick timestamptz;
begin
    if job_origin.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    select r.payload, r.cache_key into v_payload, v_key
    from queue._remembered(job_origin.job_id) as r;
    if not found then
        return;
    end if;
    if jsonb_typeof(v_payload -> '_schedule') = 'string' then
        begin
            v_tick := (v_payload ->> '_tick')::timestamptz;
        exception when data_exception then
            v_tick := null;  -- a producer's own "_tick", not a schedule's mark
        end;
    end if;
    return query select
        case when v_tick is not null then v_payload ->> '_schedule' end, v_tick, v_key;
end
$$;

COMMENT ON FUNCTION queue.job_origin(job_id bigint) IS 'Where a job came from: the schedule and tick that enqueued it, the cache key it refills.';

CREATE FUNCTION queue.job_payload(job_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if job_payload.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return (select r.payload from queue._remembered(job_payload.job_id) as r);
end
$$;

COMMENT ON FUNCTION queue.job_payload(job_id bigint) IS 'The payload of a job andal remembers (admins only).';

CREATE FUNCTION queue.jobs_by(queue text DEFAULT NULL::text, state text DEFAULT NULL::text, before bigint DEFAULT NULL::bigint, lim integer DEFAULT 100) RETURNS SETOF queue.job_info
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_live boolean;
    v_done boolean;
begin
    perform queue._check_name(jobs_by.queue, 'queue', false);
    -- the states as queue.job names them (queue.states())
    if jobs_by.state is not null
       and not exists (select from queue.states() as s where s.job_state = jobs_by.state) then
        raise exception 'state must be one of % (got %)',
            (select string_agg(s.job_state, ', ') from queue.states() as s), jobs_by.state
            using errcode = '22023';
    end if;
    if jobs_by.lim is null or jobs_by.lim not between 1 and 1000 then
        raise exception 'lim must be between 1 and 1000 (got %)', jobs_by.lim
            using errcode = '22023';
    end if;
    v_live := jobs_by.state is null or exists (
        select from queue.states() as s where s.job_state = jobs_by.state and s.live
    );
    v_done := jobs_by.state is null or not v_live;
    return query
    select s.job_id, s.state, s.queue, s.category, s.priority, s.attempts, s.max_attempts,
        s.enqueued_at, s.available_at, s.started_at, s.finished_at, s.worker,
        s.lease_expires_at, s.abort_requested_at, s.result, s.errors, s.kept_until
    from (
        (select j.id as job_id,
            queue._live_state(j.status, j.available_at, j.attempt) as state,
            j.queue, j.category, j.priority, j.attempt as attempts, j.max_attempts,
            j.enqueued_at, j.available_at, j.claimed_at as started_at,
            null::timestamptz as finished_at, j.worker, j.lease_expires_at,
            j.abort_requested_at, null::jsonb as result, j.errors,
            null::timestamptz as kept_until
         from queue.jobs as j
         where v_live
           and (jobs_by.queue is null or j.queue = jobs_by.queue)
           and (jobs_by.before is null or j.id < jobs_by.before)
           and (jobs_by.state is null
                or queue._live_state(j.status, j.available_at, j.attempt) = jobs_by.state)
         order by j.id desc
         limit jobs_by.lim)
        union all
        (select h.job_id, h.state, h.queue, h.category, h.priority, h.attempt, h.max_attempts,
            h.enqueued_at, null, h.started_at, h.finished_at, null, null, null, h.result,
            h.errors, h.keep_until
         from queue.history as h
         where v_done
           and (jobs_by.queue is null or h.queue = jobs_by.queue)
           and (jobs_by.before is null or h.job_id < jobs_by.before)
           and (jobs_by.state is null or h.state = jobs_by.state)
           and not exists (select from queue.jobs as j where j.id = h.job_id)
           and not exists (
               select from queue.history as n
               where n.job_id = h.job_id
                 and (coalesce(n.finished_seq, 0), n.finished_at)
                     > (coalesce(h.finished_seq, 0), h.finished_at))
         order by h.job_id desc
         limit jobs_by.lim)
        union all
        (select d.job_id,
            queue._ended_state(d.reason),
            d.queue, d.category, d.priority, d.attempt, d.max_attempts, d.enqueued_at, null,
            null, d.died_at, null, null, null, null, d.errors, null
         from queue.dead_letters as d
         where v_done
           and (jobs_by.queue is null or d.queue = jobs_by.queue)
           and (jobs_by.before is null or d.job_id < jobs_by.before)
           and (jobs_by.state is null
                or jobs_by.state = queue._ended_state(d.reason))
           and not exists (select from queue.jobs as j where j.id = d.job_id)
           and not exists (select from queue.history as h where h.job_id = d.job_id)
         order by d.job_id desc
         limit jobs_by.lim)
        union all
        (select r.job_id, 'completed', r.queue, null, null, null, null, null, null, null,
            r.completed_at, null, null, null, r.result, null, null
         from queue.results as r
         where v_done and (jobs_by.state is null or jobs_by.state = 'completed')
           and (jobs_by.queue is null or r.queue = jobs_by.queue)
           and (jobs_by.before is null or r.job_id < jobs_by.before)
           and not exists (select from queue.jobs as j where j.id = r.job_id)
           and not exists (select from queue.history as h where h.job_id = r.job_id)
           and not exists (select from queue.dead_letters as d where d.job_id = r.job_id)
         order by r.job_id desc
         limit jobs_by.lim)
    ) as s
    order by s.job_id desc
    limit jobs_by.lim;
end
$$;

COMMENT ON FUNCTION queue.jobs_by(queue text, state text, before bigint, lim integer) IS 'Jobs of a queue in a state, newest first, keyset-paged by id (before => last id of the page).';

CREATE TABLE queue.dead_letters (
    job_id bigint NOT NULL,
    queue text NOT NULL,
    category text,
    priority integer NOT NULL,
    payload jsonb NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    enqueued_at timestamp with time zone NOT NULL,
    died_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    dedup_key text,
    reason text NOT NULL,
    last_error text,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    cache_key text,
    CONSTRAINT dead_letters_reason_check CHECK ((reason = ANY (ARRAY['exhausted'::text, 'non_retryable'::text, 'cancelled'::text, 'parent_failed'::text])))
);

CREATE FUNCTION queue.list_dead(queue text DEFAULT NULL::text, lim integer DEFAULT 100) RETURNS SETOF queue.dead_letters
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    if list_dead.lim is null or list_dead.lim < 1 then
        raise exception 'lim must be at least 1 (got %)', list_dead.lim using errcode = '22023';
    end if;
    return query
    select d.* from queue.dead_letters as d
    where list_dead.queue is null or d.queue = list_dead.queue
    order by d.died_at desc, d.job_id desc
    limit list_dead.lim;
end
$$;

COMMENT ON FUNCTION queue.list_dead(queue text, lim integer) IS 'The newest dead letters.';

CREATE FUNCTION queue.maintain() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_reaped int := 0;
begin
    -- every step writes: refused up front, not as one warning per step
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.maintain');
    end if;
    begin
        v_reaped := queue._reap(1000);
    exception when others then
        perform queue._maintain_failed('the take-back of expired leases', sqlstate, sqlerrm);
    end;
    begin
        perform queue._fire_due(null, 1000);
    exception when others then
        perform queue._maintain_failed('firing due schedules', sqlstate, sqlerrm);
    end;
    begin
        perform queue._run_tasks();
    exception when others then
        perform queue._maintain_failed('andal''s own schedules', sqlstate, sqlerrm);
    end;
    begin
        perform cache._apply_deferred(1000);  -- jobs' cache writes that met a producer's
        -- queue.watch's records of jobs that ended while the watch was uncommitted
        delete from queue.watches as w
        where not exists (select from queue.jobs as j where j.id = w.job_id);
    exception when others then
        perform queue._maintain_failed('deferred cache writes and watches', sqlstate, sqlerrm);
    end;
    begin
        if not exists (select from queue.wal_samples as w
                       where w.sampled_at > now() - interval '1 minute') then
            insert into queue.wal_samples (wal_lsn) values (pg_current_wal_lsn())
            on conflict do nothing;
            delete from queue.lock_stats as s where s.minute < now() - interval '1 day';
            delete from queue.stat_minutes as s where s.minute < now() - interval '1 day';
            delete from queue.wal_samples as w where w.sampled_at < now() - interval '1 day';
            perform queue._forget_unused();
            perform queue._workflow_sweep();
        end if;
    exception when others then
        perform queue._maintain_failed('pruning counters and unused names', sqlstate, sqlerrm);
    end;
    begin
        perform queue._history_roll();
        perform queue._prune_completions();
    exception when others then
        perform queue._maintain_failed('rolling the history and the recent completions',
            sqlstate, sqlerrm);
    end;
    return v_reaped;
end
$$;

COMMENT ON FUNCTION queue.maintain() IS 'Housekeeping: take back expired leases, prune counters.';

CREATE FUNCTION queue.metrics() RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_out text;
    v_cache text;
begin
    with s as materialized (
        select st.*, 'queue=' || queue._prom_label(st.queue)
            || coalesce(',category=' || queue._prom_label(st.category), '') as l
        from queue.stats() as st
    ),
    m (ord, name, help) as (values
        (1, 'andal_jobs', 'Live jobs by state (ready, scheduled, running, waiting).'),
        (2, 'andal_dead_jobs', 'Jobs in the dead letters.'),
        (3, 'andal_oldest_ready_age_seconds', 'Age of the oldest ready job.'),
        (4, 'andal_job_events', 'Attempts ended in a recent window, by outcome.'),
        (5, 'andal_run_seconds_avg', 'Average time in progress of attempts ended in the last hour.'),
        (6, 'andal_run_seconds_p95', '95th percentile of time in progress, last hour.'),
        (7, 'andal_failure_rate', 'Failed attempts / ended attempts, last hour.'),
        (8, 'andal_retries_per_job', 'Retries per finished job, last hour.'),
        (9, 'andal_lock_attempts', 'Gate try-locks on categories, last hour.'),
        (10, 'andal_lock_contention_ratio', 'Try-locks that returned false / try-locks, last hour.'),
        (11, 'andal_pickup_seconds', 'Ready-to-start latency quantiles, last hour.'),
        (12, 'andal_wal_bytes_per_job', 'WAL bytes per ended attempt between the last two samples.')
    ),
    samples (ord, line) as (
        select 1, format('andal_jobs{%s,state="ready"} %s', s.l, s.ready) from s
        union all select 1, format('andal_jobs{%s,state="scheduled"} %s', s.l, s.scheduled) from s
        union all select 1, format('andal_jobs{%s,state="running"} %s', s.l, s.running) from s
        union all select 1, format('andal_jobs{%s,state="waiting"} %s', s.l, s.waiting) from s
        union all select 2, format('andal_dead_jobs{%s} %s', s.l, s.dead) from s
        union all select 3, format('andal_oldest_ready_age_seconds{%s} %s', s.l,
            coalesce(extract(epoch from s.oldest_ready_age), 0)) from s
        union all select 4, format('andal_job_events{%s,outcome="%s",window="%s"} %s',
            s.l, e.outcome, e.win, e.n)
        from s cross join lateral (values
            ('completed', '1m', s.completed_1m), ('completed', '15m', s.completed_15m),
            ('completed', '1h', s.completed_1h), ('retried', '1m', s.retried_1m),
            ('retried', '15m', s.retried_15m), ('retried', '1h', s.retried_1h),
            ('dead', '1m', s.dead_1m), ('dead', '15m', s.dead_15m), ('dead', '1h', s.dead_1h)
        ) as e (outcome, win, n)
        union all select 5, format('andal_run_seconds_avg{%s} %s', s.l, s.avg_run_ms / 1000)
        from s where s.avg_run_ms is not null
        union all select 6, format('andal_run_seconds_p95{%s} %s', s.l, s.p95_run_ms / 1000)
        from s where s.p95_run_ms is not null
        union all select 7, format('andal_failure_rate{%s} %s', s.l, s.failure_rate)
        from s where s.failure_rate is not null
        union all select 8, format('andal_retries_per_job{%s} %s', s.l, s.retries_per_job)
        from s where s.retries_per_job is not null
        union all select 9, format('andal_lock_attempts{%s} %s', s.l, s.lock_attempts)
        from s where s.category is not null
        union all select 10, format('andal_lock_contention_ratio{%s} %s', s.l, s.contention_ratio)
        from s where s.contention_ratio is not null
        union all select 11, format('andal_pickup_seconds{%s,quantile="%s"} %s', s.l, q.q, q.v / 1000)
        from s cross join lateral (values
            ('0.5', s.pickup_p50_ms), ('0.95', s.pickup_p95_ms), ('0.99', s.pickup_p99_ms)
        ) as q (q, v)
        where q.v is not null
        union all select 12, format('andal_wal_bytes_per_job{%s} %s', s.l, s.wal_bytes_per_job)
        from s where s.wal_bytes_per_job is not null
    )
    select string_agg(b.block, '' order by b.ord) into v_out
    from (
        select m.ord, format(e'# HELP %s %s\n# TYPE %s gauge\n', m.name, m.help, m.name)
            || coalesce(string_agg(x.line || e'\n', '' order by x.line), '') as block
        from m left join samples as x on x.ord = m.ord
        group by m.ord, m.name, m.help
    ) as b;
    if to_regprocedure('cache._metrics()') is not null and pg_is_in_recovery() then
        v_out := v_out || e'# andal_cache_*: not served by a standby (the shared cache is '
            || e'UNLOGGED and lives on the primary only): scrape the primary for them\n';
    elsif to_regprocedure('cache._metrics()') is not null then
        execute 'select cache._metrics()' into v_cache;
        v_out := v_out || coalesce(v_cache, '');
    end if;
    return v_out;
end
$$;

COMMENT ON FUNCTION queue.metrics() IS 'Every queue statistic as Prometheus exposition text.';

CREATE FUNCTION queue.next_available(queues text[] DEFAULT NULL::text[]) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_jobs timestamptz;
    v_ticks timestamptz;
    -- paused categories and those whose unexpired slots are all taken: the gate's own rule
    v_full text[] := queue._full_categories(queue._lease_clock());
begin
    if next_available.queues is not null then
        perform queue._check_names(next_available.queues, 'queues');
    end if;

    with cats as (
        select c.category,
            -- a full window (rate_starts starts in it, queue._rate_left): the next start is
            -- when the oldest of the newest rate_starts leaves it
            case when queue._rate_left(c.rate_log, c.rate_starts, c.rate_per,
                    queue._lease_clock()) <= 0 then (
                select t.at + c.rate_per from unnest(c.rate_log) as t (at)
                order by t.at desc offset c.rate_starts - 1 limit 1
            ) end as rate_free_at
        from queue.categories as c
    )
    select min(case when j.category is null then j.available_at
        else greatest(j.available_at, k.rate_free_at) end)
    into v_jobs
    from queue.jobs as j
    left join cats as k on k.category = j.category
    where j.status = 'pending'
        and (next_available.queues is null or j.queue = any (next_available.queues))
        and not exists (select from queue.queues as q where q.queue = j.queue and q.paused)
        and (j.category is null or not j.category = any (v_full));

    select min(s.next_at) into v_ticks
    from queue.schedules as s
    where s.task is null and s.next_at is not null
        and (next_available.queues is null or s.queue = any (next_available.queues))
        and not exists (select from queue.queues as q where q.queue = s.queue and q.paused);

    return least(v_jobs, v_ticks);
end
$$;

COMMENT ON FUNCTION queue.next_available(queues text[]) IS 'When the next job of the queues becomes claimable (null: nothing scheduled).';

CREATE FUNCTION queue.parent_results(job_id bigint) RETURNS TABLE(parent_id bigint, state text, result jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
begin
    if parent_results.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    return query
    -- a parent that completed without a result keeps no row: one andal finds neither live
    -- nor dead (nor in its history or results) completed
    select e.parent_id, coalesce(r.state, k.state, 'completed'), coalesce(r.result, k.result)
    from queue.job_edges as e
    left join queue.workflow_results as r on r.job_id = e.parent_id
    left join lateral (select x.state, x.result from queue.job(e.parent_id) as x) as k
        on r.job_id is null
    where e.child_id = parent_results.job_id
    order by e.parent_id;
end
$$;

COMMENT ON FUNCTION queue.parent_results(job_id bigint) IS 'The parents of a job: id, state and (kept) result of each.';

CREATE FUNCTION queue.pause(queue text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(pause.queue, 'queue');
    perform queue._config(pause.queue);
    update queue.queues as q set paused = true, updated_at = now()
    where q.queue = pause.queue and not q.paused;
end
$$;

COMMENT ON FUNCTION queue.pause(queue text) IS 'Pause a queue: its jobs are not claimed (running ones finish; enqueue still works).';

CREATE FUNCTION queue.purge_dead(older_than interval) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_count bigint;
begin
    perform queue._check_interval(purge_dead.older_than, 'older_than');
    delete from queue.dead_letters as d where d.died_at < now() - purge_dead.older_than;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

COMMENT ON FUNCTION queue.purge_dead(older_than interval) IS 'Delete dead letters older than an interval.';

CREATE FUNCTION queue.purge_dead_jobs(job_ids bigint[]) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_count bigint;
begin
    if purge_dead_jobs.job_ids is null or array_position(purge_dead_jobs.job_ids, null) is not null
    then
        raise exception 'job_ids must not be null nor hold a null' using errcode = '22004';
    end if;
    if cardinality(purge_dead_jobs.job_ids) > 10000 then
        raise exception 'at most 10000 job_ids per call (got %)',
            cardinality(purge_dead_jobs.job_ids)
            using errcode = '22023', hint = 'Purge in batches of 10000.';
    end if;
    delete from queue.dead_letters as d where d.job_id = any (purge_dead_jobs.job_ids);
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

COMMENT ON FUNCTION queue.purge_dead_jobs(job_ids bigint[]) IS 'Delete the dead letters with the given ids; returns how many.';

CREATE FUNCTION queue.purge_dead_matching(queue text DEFAULT NULL::text, reason text DEFAULT NULL::text, older_than interval DEFAULT NULL::interval, max_rows integer DEFAULT 1000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_ids bigint[] := queue._dead_matching(
        purge_dead_matching.queue, purge_dead_matching.reason, purge_dead_matching.older_than,
        purge_dead_matching.max_rows
    );
    v_count bigint;
begin
    delete from queue.dead_letters as d where d.job_id = any (v_ids);
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

COMMENT ON FUNCTION queue.purge_dead_matching(queue text, reason text, older_than interval, max_rows integer) IS 'Delete at most max_rows dead letters matching queue, reason and age; returns how many.';

CREATE FUNCTION queue.queue_settings(queue text) RETURNS TABLE(configured boolean, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text, paused boolean, timeout interval, results_retention interval, dead_retention interval, history_retention interval, updated_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(queue_settings.queue, 'queue');
    return query
    select true, q.max_attempts, q.lease, q.backoff, q.backoff_base, q.backoff_cap,
        q.jitter, q.notify, q.payload_limit, q.keep_results, q.cache_policy, q.paused,
        q.timeout, q.results_retention, q.dead_retention, q.history_retention, q.updated_at
    from queue.queues as q
    where q.queue = queue_settings.queue;
    if not found then  -- a missing row means the column defaults (queue/_policy.sql)
        return query select false, d.max_attempts, d.lease, d.backoff, d.backoff_base,
            d.backoff_cap, d.jitter, d.notify, d.payload_limit, d.keep_results,
            d.cache_policy, d.paused, d.timeout, d.results_retention, d.dead_retention,
            d.history_retention, null::timestamptz
        from queue._queue_defaults() as d;
    end if;
end
$$;

COMMENT ON FUNCTION queue.queue_settings(queue text) IS 'A queue''s policy (the defaults when never configured): attempts, lease, backoff, retention.';

CREATE FUNCTION queue.rate_limits() RETURNS TABLE(category text, starts integer, per interval, started_in_window integer, max_running integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select c.category, c.rate_starts, c.rate_per,
        c.rate_starts - queue._rate_left(c.rate_log, c.rate_starts, c.rate_per, now()),
        c.max_running
    from queue.categories as c
    where c.rate_starts is not null
    order by c.category
$$;

COMMENT ON FUNCTION queue.rate_limits() IS 'Every rate-limited category: starts per window, starts in the current window, its limit.';

CREATE FUNCTION queue.refusals(job_ids bigint[], tokens uuid[]) RETURNS TABLE(job_id bigint, refused text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if refusals.job_ids is null or refusals.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if cardinality(refusals.job_ids) <> cardinality(refusals.tokens) then
        raise exception 'job_ids and tokens must have the same length' using errcode = '22023';
    end if;
    return query
    select i.id, case when i.id is not null and i.tok is not null
        then queue._refusal(i.id, i.tok) end
    from unnest(refusals.job_ids, refusals.tokens) with ordinality as i (id, tok, n)
    order by i.n;
end
$$;

COMMENT ON FUNCTION queue.refusals(job_ids bigint[], tokens uuid[]) IS 'Why a write on behalf of each (job, token) would be refused now (null: it would hold).';

CREATE FUNCTION queue.register_worker(worker text, host text, pid integer, queues text[] DEFAULT '{}'::text[], slots integer DEFAULT 0, version text DEFAULT NULL::text, expire_after interval DEFAULT '00:01:00'::interval) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_queues text[] := coalesce(register_worker.queues, '{}'::text[]);
    v_slots int := coalesce(register_worker.slots, 0);
    v_expire interval := coalesce(register_worker.expire_after, interval '1 minute');
begin
    perform queue._check_name(register_worker.worker, 'worker');
    perform queue._check_name(register_worker.host, 'host', true, 255);
    perform queue._check_name(register_worker.version, 'version', false, 64);
    if register_worker.pid is null then
        raise exception 'pid must not be null' using errcode = '22004';
    end if;
    if register_worker.pid < 0 then
        raise exception 'pid must not be negative (got %)', register_worker.pid
            using errcode = '22023';
    end if;
    if v_slots not between 0 and 100000 then
        raise exception 'slots must be between 0 and 100000 (got %)', v_slots
            using errcode = '22023';
    end if;
    if array_ndims(v_queues) > 1 or array_lower(v_queues, 1) <> 1
        or cardinality(v_queues) > 1000 then
        raise exception 'queues must be a one-dimensional array of at most 1000 names'
            using errcode = '22023';
    end if;
    perform queue._check_names(v_queues, 'queues');
    perform queue._check_interval(v_expire, 'expire_after', true, true, 'lease');

    delete from queue.worker_registrations as r
    where r.last_seen_at + r.expire_after < now() and r.worker <> register_worker.worker;
    insert into queue.worker_registrations as r (
        worker, host, pid, queues, slots, version, started_at, last_seen_at, expire_after
    ) values (
        register_worker.worker, register_worker.host, register_worker.pid, v_queues, v_slots,
        register_worker.version, now(), now(), v_expire
    )
    on conflict (worker) do update set
        host = excluded.host, pid = excluded.pid, queues = excluded.queues,
        slots = excluded.slots, version = excluded.version,
        started_at = case when (r.host, r.pid) = (excluded.host, excluded.pid)
            and r.last_seen_at + r.expire_after >= now()
            then r.started_at else excluded.started_at end,
        last_seen_at = excluded.last_seen_at, expire_after = excluded.expire_after;
    return now() + v_expire;
end
$$;

COMMENT ON FUNCTION queue.register_worker(worker text, host text, pid integer, queues text[], slots integer, version text, expire_after interval) IS 'Register a worker, or refresh its registration; returns when it expires.';

CREATE FUNCTION queue.registered_workers() RETURNS TABLE(worker text, host text, pid integer, queues text[], slots integer, busy bigint, version text, started_at timestamp with time zone, last_seen_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query
    select r.worker, r.host, r.pid, r.queues, r.slots,
        (select count(*) from queue.jobs as j
         where j.worker = r.worker and j.status = 'running'),
        r.version, r.started_at, r.last_seen_at
    from queue.worker_registrations as r
    where r.last_seen_at + r.expire_after >= now()
    order by r.worker;
end
$$;

COMMENT ON FUNCTION queue.registered_workers() IS 'Live worker registrations: host, pid, queues, slots, busy, version, start, last refresh.';

CREATE FUNCTION queue.release(job_id bigint, token uuid, delay interval DEFAULT '00:00:00'::interval) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_job record;
begin
    if release.job_id is null or release.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(release.delay, 'delay', bound => 'delay');
    -- The row first, as queue.fail: a cancel committed while this call waited for it is
    -- seen (the decision and the write read the same row version), so an abort request is
    -- never lost to a concurrent release.
    select j.* into v_job from queue.jobs as j where j.id = release.job_id for update;
    if v_job.id is null or v_job.status <> 'running' or v_job.token <> release.token
        or v_job.lease_expires_at <= queue._lease_clock() then
        perform queue._lease_lost(release.job_id, release.token);
    end if;
    if v_job.abort_requested_at is not null then
        perform queue.fail(release.job_id, release.token, 'aborted: released');
        return;
    end if;
    update queue.jobs as j
    set status = 'pending', attempt = greatest(j.attempt - 1, 0), token = null, worker = null,
        claimed_at = null, lease_expires_at = null, available_at = now() + release.delay
    where j.id = v_job.id
    returning j.* into v_job;
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'released', null, null,
        ready_at => v_job.available_at);
end
$$;

COMMENT ON FUNCTION queue.release(job_id bigint, token uuid, delay interval) IS 'Give a claimed job back without spending an attempt.';

CREATE FUNCTION queue.requeue_dead(job_id bigint) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_dead queue.dead_letters;
begin
    if requeue_dead.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    delete from queue.dead_letters as d where d.job_id = requeue_dead.job_id returning d.* into v_dead;
    if v_dead.job_id is null then
        if exists (select from queue.jobs as j where j.id = requeue_dead.job_id) then
            raise exception 'job % is live, not dead', requeue_dead.job_id using errcode = '55000';
        end if;
        raise exception 'no dead job with id %', requeue_dead.job_id using errcode = '42704';
    end if;
    if v_dead.dedup_key is not null and exists (
        select from queue.jobs as j where j.queue = v_dead.queue and j.dedup_key = v_dead.dedup_key
    ) then
        raise exception 'a live job of queue % already holds dedup_key %',
            v_dead.queue, v_dead.dedup_key using errcode = '55000';
    end if;
    -- The check above cannot see an enqueue of the same key that has not committed yet: the
    -- insert waits for it and, when it commits, finds the key held (55000, not 23505).
    insert into queue.jobs as j (
        id, queue, category, priority, payload, attempt, max_attempts, enqueued_at,
        dedup_key, errors, cache_key
    ) overriding system value values (
        v_dead.job_id, v_dead.queue, v_dead.category, v_dead.priority, v_dead.payload, 0,
        v_dead.max_attempts, v_dead.enqueued_at, v_dead.dedup_key, v_dead.errors,
        v_dead.cache_key
    )
    on conflict (queue, dedup_key) where dedup_key is not null do nothing;
    if not found then
        raise exception 'a live job of queue % already holds dedup_key %',
            v_dead.queue, v_dead.dedup_key using errcode = '55000';
    end if;
    if v_dead.category is not null then
        perform queue._category_id(v_dead.category);
    end if;
    perform queue._notify_ready(v_dead.queue, (queue._config(v_dead.queue)).notify);
    return v_dead.job_id;
end
$$;

COMMENT ON FUNCTION queue.requeue_dead(job_id bigint) IS 'Bring a dead job back as pending with a fresh attempt count.';

CREATE FUNCTION queue.requeue_dead(job_id bigint, with_children boolean) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_id bigint := queue.requeue_dead(job_id => requeue_dead.job_id);
begin
    if coalesce(with_children, false) then
        perform queue._workflow_requeue(v_id);
    end if;
    return v_id;
end
$$;

COMMENT ON FUNCTION queue.requeue_dead(job_id bigint, with_children boolean) IS 'Bring a dead job back, and (with_children) the children cancelled because it failed.';

CREATE FUNCTION queue.requeue_dead_matching(queue text DEFAULT NULL::text, reason text DEFAULT NULL::text, older_than interval DEFAULT NULL::interval, max_rows integer DEFAULT 1000) RETURNS TABLE(requeued bigint, refused bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_ids bigint[] := queue._dead_matching(
        requeue_dead_matching.queue, requeue_dead_matching.reason,
        requeue_dead_matching.older_than, requeue_dead_matching.max_rows
    );
    v_id bigint;
begin
    requeued := 0;
    refused := 0;
    foreach v_id in array v_ids loop
        begin
            perform queue.requeue_dead(job_id => v_id);
            requeued := requeued + 1;
        exception when sqlstate '55000' then
            refused := refused + 1;
        end;
    end loop;
    return next;
end
$$;

COMMENT ON FUNCTION queue.requeue_dead_matching(queue text, reason text, older_than interval, max_rows integer) IS 'Requeue at most max_rows dead letters matching queue, reason and age.';

CREATE FUNCTION queue.resume(queue text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_notify boolean;
begin
    perform queue._check_name(resume.queue, 'queue');
    update queue.queues as q set paused = false, updated_at = now()
    where q.queue = resume.queue and q.paused
    returning q.notify into v_notify;
    if v_notify then
        perform queue._notify('andal_jobs', resume.queue);
    end if;
end
$$;

COMMENT ON FUNCTION queue.resume(queue text) IS 'Resume a paused queue.';

CREATE FUNCTION queue.roles() RETURNS TABLE(kind text, role_name text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select k.kind, s.role_prefix || '_' || k.kind
    from queue.install_state as s
    cross join unnest(array['producer', 'worker', 'admin', 'monitor'])
        with ordinality as k (kind, n)
    order by k.n
$$;

COMMENT ON FUNCTION queue.roles() IS 'The names of this install''s producer, worker, admin and monitor roles.';

CREATE FUNCTION queue.schedule(name text, queue text DEFAULT NULL::text, cron text DEFAULT NULL::text, every interval DEFAULT NULL::interval, payload jsonb DEFAULT '{}'::jsonb, timezone text DEFAULT 'UTC'::text, category text DEFAULT NULL::text, priority integer DEFAULT 0, max_attempts integer DEFAULT NULL::integer, missed text DEFAULT 'latest'::text, catch_up integer DEFAULT 100, enabled boolean DEFAULT true) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION queue.schedule(name text, queue text, cron text, every interval, payload jsonb, timezone text, category text, priority integer, max_attempts integer, missed text, catch_up integer, enabled boolean) IS 'Create or update a named schedule (cron or every); one job per tick, exactly once.';

CREATE FUNCTION queue.schedules() RETURNS TABLE(name text, queue text, cron text, every interval, timezone text, payload jsonb, category text, priority integer, missed text, catch_up integer, enabled boolean, builtin boolean, last_tick timestamp with time zone, last_fired_at timestamp with time zone, last_job_id bigint, next_at timestamp with time zone, last_error text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_payloads boolean := exists (
        select from pg_catalog.pg_proc as p
        where p.pronamespace = 'queue'::regnamespace and p.proname in ('claim', 'schedule')
            and pg_catalog.has_function_privilege(queue._caller(), p.oid, 'EXECUTE'));
begin
    return query
    select s.name, s.queue, s.cron, s.every, s.timezone,
        case when v_payloads then s.payload end, s.category, s.priority,
        s.missed, s.catch_up, s.enabled, s.task is not null, s.last_tick, s.last_fired_at,
        s.last_job_id, s.next_at, s.last_error
    from queue.schedules as s
    order by s.name;
end
$$;

COMMENT ON FUNCTION queue.schedules() IS 'Every schedule (housekeeping included) with its last tick and next fire time.';

CREATE FUNCTION queue.set_category_limit(category text, max_running integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(set_category_limit.category, 'category');
    if set_category_limit.max_running is null then
        raise exception 'max_running must not be null' using errcode = '22004';
    end if;
    if set_category_limit.max_running < 0 then
        raise exception 'max_running must be 0 or more (got %)', set_category_limit.max_running
            using errcode = '22023';
    end if;
    insert into queue.categories as c (category, max_running)
    values (set_category_limit.category, set_category_limit.max_running)
    on conflict (category) do update set max_running = excluded.max_running;
end
$$;

COMMENT ON FUNCTION queue.set_category_limit(category text, max_running integer) IS 'At most max_running running jobs of a category (0 pauses it).';

CREATE FUNCTION queue.set_history(queue text, retention interval) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(set_history.queue, 'queue');
    perform queue._check_interval(set_history.retention, 'retention', true, false);
    perform queue._config(set_history.queue);
    update queue.queues as q
    set history_retention = set_history.retention, updated_at = now()
    where q.queue = set_history.queue;
    perform queue._history_roll();
end
$$;

COMMENT ON FUNCTION queue.set_history(queue text, retention interval) IS 'Keep a queue''s finished jobs for retention (null: none), for queue.job.';

CREATE FUNCTION queue.set_rate_limit(category text, starts integer, per interval) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(set_rate_limit.category, 'category');
    if (set_rate_limit.starts is null) <> (set_rate_limit.per is null) then
        raise exception 'give both starts and per, or neither (to remove the limit)'
            using errcode = '22004';
    end if;
    if set_rate_limit.starts not between 1 and 10000 then
        raise exception 'starts must be between 1 and 10000 (got %)', set_rate_limit.starts
            using errcode = '22023';
    end if;
    perform queue._check_interval(set_rate_limit.per, 'per', true, false, 'delay');
    insert into queue.categories as c (category, rate_starts, rate_per)
    values (set_rate_limit.category, set_rate_limit.starts, set_rate_limit.per)
    on conflict (category) do update
    set rate_starts = excluded.rate_starts, rate_per = excluded.rate_per,
        rate_log = case when excluded.rate_starts is null then '{}'
            else c.rate_log[1:excluded.rate_starts] end;
end
$$;

COMMENT ON FUNCTION queue.set_rate_limit(category text, starts integer, per interval) IS 'At most starts starts of a category''s jobs in any window of per (null, null: no limit).';

CREATE FUNCTION queue.set_shards(shards integer) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_current int;
    v_options text;
    v_part text;
    v_moved bigint;
begin
    if set_shards.shards is null then
        raise exception 'shards must not be null' using errcode = '22004';
    end if;
    if set_shards.shards not between 1 and 64 then
        raise exception 'shards must be between 1 and 64 (got %)', set_shards.shards
            using errcode = '22023';
    end if;
    lock table queue.jobs in access exclusive mode;
    select count(*) into v_current from pg_inherits where inhparent = 'queue.jobs'::regclass;
    if v_current = set_shards.shards then
        return 0;
    end if;
    -- the storage options migration 0011 gave the partitions, for the new ones
    select array_to_string(c.reloptions, ', ') into v_options
    from pg_inherits as i
    join pg_class as c on c.oid = i.inhrelid
    where i.inhparent = 'queue.jobs'::regclass
    order by c.relname
    limit 1;

    -- The live jobs aside, the old partitions dropped, the new ones created (with the
    -- indexes of queue.jobs), the jobs back with their ids.
    -- (statements naming queue.jobs_resharding are dynamic: it exists only during the call)
    execute format('create unlogged table queue.%I as select * from queue.jobs', 'jobs_resharding');
    get diagnostics v_moved = row_count;
    for v_part in
        select i.inhrelid::regclass::text from pg_inherits as i
        where i.inhparent = 'queue.jobs'::regclass
    loop
        execute format('drop table %s', v_part);
    end loop;
    for v_r in 0 .. set_shards.shards - 1 loop
        execute format(
            'create table queue.%I partition of queue.jobs'
            ' for values with (modulus %s, remainder %s)%s',
            'jobs_p' || v_r, set_shards.shards, v_r,
            case when v_options is not null then format(' with (%s)', v_options) else '' end);
    end loop;
    execute format('insert into queue.jobs overriding system value select * from queue.%I',
        'jobs_resharding');
    execute format('drop table queue.%I', 'jobs_resharding');
    analyze queue.jobs;
    return v_moved;
end
$$;

COMMENT ON FUNCTION queue.set_shards(shards integer) IS 'Spread queue.jobs over n hash partitions by queue (1: unsharded), in place, keeping every job.';

CREATE FUNCTION queue.shard_of(queue text) RETURNS integer
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_n int;
begin
    perform queue._check_name(shard_of.queue, 'queue');
    select count(*) into v_n from pg_inherits where inhparent = 'queue.jobs'::regclass;
    if v_n = 0 then
        return 0;
    end if;
    for v_r in 0 .. v_n - 1 loop
        if satisfies_hash_partition('queue.jobs'::regclass, v_n, v_r, shard_of.queue) then
            return v_r;
        end if;
    end loop;
    return null;
end
$$;

COMMENT ON FUNCTION queue.shard_of(queue text) IS 'The shard (hash partition of queue.jobs) that holds a queue''s jobs; 0 when unsharded.';

CREATE FUNCTION queue.shards() RETURNS TABLE(shard integer, relation text, live_jobs bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_part record;
    v_n bigint;
begin
    lock table queue.jobs in access share mode;
    for v_part in
        select format('%I.%I', n.nspname, c.relname) as name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'remainder (\d+)'))[1]::int as r
        from pg_inherits as i
        join pg_class as c on c.oid = i.inhrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where i.inhparent = 'queue.jobs'::regclass
        order by 2
    loop
        execute format('select count(*) from %s', v_part.name) into v_n;
        shard := v_part.r;
        relation := v_part.name;
        live_jobs := v_n;
        return next;
    end loop;
end
$$;

COMMENT ON FUNCTION queue.shards() IS 'The live table''s shards: one row per partition with its live job count.';

CREATE FUNCTION queue.states() RETURNS TABLE(state text, meaning text, live boolean, job_state text)
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select v.state, v.meaning, v.live, queue._job_name(v.state)
    from (values
        (1, 'waiting', 'waits for its parents to end (enqueued with after)', true),
        (2, 'scheduled', 'waits for its delay (no attempt yet)', true),
        (3, 'ready', 'claimable now', true),
        (4, 'running', 'claimed: a worker holds it under a token and a lease', true),
        (5, 'failed', 'an attempt failed; the retry waits for its backoff', true),
        (6, 'completed', 'done', false),
        (7, 'dead', 'out of attempts, or failed with retryable false', false),
        (8, 'cancelled', 'withdrawn by queue.cancel, or by the failure of a parent', false)
    ) as v (n, state, meaning, live)
    order by v.n
$$;

COMMENT ON FUNCTION queue.states() IS 'The job states, in a job''s order of life: name, meaning, live, and the name queue.job gives it.';

CREATE FUNCTION queue.stats() RETURNS TABLE(queue text, category text, ready bigint, scheduled bigint, running bigint, dead bigint, oldest_ready_age interval, avg_run_ms double precision, p95_run_ms double precision, completed_1m bigint, completed_15m bigint, completed_1h bigint, retried_1m bigint, retried_15m bigint, retried_1h bigint, dead_1m bigint, dead_15m bigint, dead_1h bigint, failure_rate double precision, retries_per_job double precision, lock_attempts bigint, lock_failures bigint, contention_ratio double precision, pickup_p50_ms double precision, pickup_p95_ms double precision, pickup_p99_ms double precision, wal_bytes_per_job double precision, held_xmin_age bigint, held_xmin_seconds double precision, paused boolean, rate_refusals bigint, waiting bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_wal double precision;
    v_xmin_age bigint;
    v_xmin_seconds double precision;
    -- windows are whole minutes: the current one and the n - 1 before it
    v_1m timestamptz := date_trunc('minute', now());
    v_15m timestamptz := date_trunc('minute', now()) - interval '14 minutes';
    v_1h timestamptz := date_trunc('minute', now()) - interval '59 minutes';
begin
    -- WAL bytes per ended job between the two newest samples (cluster-wide WAL).
    select (s1.wal_lsn - s0.wal_lsn)::double precision / nullif((
        select sum(m.completed + m.retried + m.dead) from queue.stat_minutes as m
        where m.minute >= date_trunc('minute', s0.sampled_at)
          and m.minute < date_trunc('minute', s1.sampled_at)), 0)
    into v_wal
    from (select w.* from queue.wal_samples as w order by w.sampled_at desc limit 1) as s1,
        lateral (select w.* from queue.wal_samples as w where w.sampled_at < s1.sampled_at
                 order by w.sampled_at desc limit 1) as s0;

    -- The oldest xmin holding back vacuum in this database (this call's own excepted).
    select age(h.x)::bigint, date_part('epoch', clock_timestamp() - h.since)
    into v_xmin_age, v_xmin_seconds
    from (
        select a.backend_xmin as x, a.xact_start as since from pg_stat_activity as a
        where a.datname = current_database() and a.pid <> pg_backend_pid()
          and a.backend_xmin is not null
        union all
        select a.backend_xid, a.xact_start from pg_stat_activity as a
        where a.datname = current_database() and a.pid <> pg_backend_pid()
          and a.backend_xid is not null
        union all
        select p.transaction, p.prepared from pg_prepared_xacts as p
        where p.database = current_database()
        union all
        select s.xmin, null from pg_replication_slots as s where s.xmin is not null
    ) as h
    order by age(h.x) desc
    limit 1;

    return query
    with live as (select * from queue._live_counts()),
    dl as (
        select d.queue, coalesce(d.category, '') as category, count(*) as dead
        from queue.dead_letters as d group by 1, 2
    ),
    ev as (
        select m.queue, m.category,
            sum(m.completed) filter (where m.minute >= v_1m) as c1,
            sum(m.completed) filter (where m.minute >= v_15m) as c15,
            sum(m.completed) as c60,
            sum(m.retried) filter (where m.minute >= v_1m) as r1,
            sum(m.retried) filter (where m.minute >= v_15m) as r15,
            sum(m.retried) as r60,
            sum(m.dead) filter (where m.minute >= v_1m) as d1,
            sum(m.dead) filter (where m.minute >= v_15m) as d15,
            sum(m.dead) as d60,
            sum(m.run_count) as run_count, sum(m.run_ms) as run_ms
        from queue.stat_minutes as m
        where m.minute >= v_1h
        group by 1, 2
    ),
    hist as (
        select m.queue, m.category, h.kind, h.i, sum(h.v)::bigint as v
        from queue.stat_minutes as m
        cross join lateral (
            select 'run' as kind, r.i, r.v from unnest(m.run_hist) with ordinality as r (v, i)
            union all
            select 'wait', w.i, w.v from unnest(m.wait_hist) with ordinality as w (v, i)
        ) as h
        where m.minute >= v_1h
        group by 1, 2, 3, 4
    ),
    hists as (
        select h.queue, h.category,
            array_agg(h.v order by h.i) filter (where h.kind = 'run') as run_hist,
            array_agg(h.v order by h.i) filter (where h.kind = 'wait') as wait_hist
        from hist as h group by 1, 2
    ),
    locks as (
        select c.category, sum(s.attempts)::bigint as attempts, sum(s.failures)::bigint as failures,
            sum(s.rate_refusals)::bigint as rate_refusals
        from queue.lock_stats as s join queue.categories as c on c.id = s.category_id
        where s.minute >= v_1h
        group by 1
    ),
    keys as (
        select l.queue, l.category from live as l
        union select d.queue, d.category from dl as d
        union select e.queue, e.category from ev as e
        union select q.queue, '' from queue.queues as q where q.paused
    ),
    per_category as (
        select k.queue, k.category,
            coalesce(l.ready, 0) as ready, coalesce(l.scheduled, 0) as scheduled,
            coalesce(l.running, 0) as running, coalesce(d.dead, 0) as dead,
            l.oldest_ready,
            coalesce(e.c1, 0) as c1, coalesce(e.c15, 0) as c15, coalesce(e.c60, 0) as c60,
            coalesce(e.r1, 0) as r1, coalesce(e.r15, 0) as r15, coalesce(e.r60, 0) as r60,
            coalesce(e.d1, 0) as d1, coalesce(e.d15, 0) as d15, coalesce(e.d60, 0) as d60,
            coalesce(e.run_count, 0) as run_count, coalesce(e.run_ms, 0) as run_ms,
            h.run_hist, h.wait_hist,
            coalesce(lk.attempts, 0) as lock_attempts, coalesce(lk.failures, 0) as lock_failures,
            coalesce(lk.rate_refusals, 0) as rate_refusals, coalesce(l.waiting, 0) as waiting
        from keys as k
        left join live as l on l.queue = k.queue and l.category = k.category
        left join dl as d on d.queue = k.queue and d.category = k.category
        left join ev as e on e.queue = k.queue and e.category = k.category
        left join hists as h on h.queue = k.queue and h.category = k.category
        left join locks as lk on lk.category = k.category and k.category <> ''
    ),
    queue_hists as (
        select b.queue,
            array_agg(b.v order by b.i) filter (where b.kind = 'run') as run_hist,
            array_agg(b.v order by b.i) filter (where b.kind = 'wait') as wait_hist
        from (
            select p.queue, x.kind, x.i, sum(x.v)::bigint as v
            from per_category as p
            cross join lateral (
                select 'run' as kind, r.i, r.v from unnest(p.run_hist) with ordinality as r (v, i)
                union all
                select 'wait', w.i, w.v from unnest(p.wait_hist) with ordinality as w (v, i)
            ) as x
            group by 1, 2, 3
        ) as b
        group by b.queue
    ),
    rolled as (
        -- one row per queue and category, plus one per queue (category null)
        select p.queue, nullif(p.category, '') as category, false as total,
            p.ready, p.scheduled, p.running, p.dead, p.oldest_ready,
            p.c1, p.c15, p.c60, p.r1, p.r15, p.r60, p.d1, p.d15, p.d60,
            p.run_count, p.run_ms, p.run_hist, p.wait_hist, p.lock_attempts, p.lock_failures,
            p.rate_refusals, p.waiting
        from per_category as p where p.category <> ''
        union all
        -- one per queue: the sums, and the histograms summed bucket by bucket (grouped
        -- once for all queues, not a subquery per queue: that was quadratic)
        select t.queue, null, true,
            t.ready, t.scheduled, t.running, t.dead, t.oldest_ready,
            t.c1, t.c15, t.c60, t.r1, t.r15, t.r60, t.d1, t.d15, t.d60,
            t.run_count, t.run_ms, qh.run_hist, qh.wait_hist, t.lock_attempts, t.lock_failures,
            t.rate_refusals, t.waiting
        from (
            select p.queue,
                sum(p.ready)::bigint as ready, sum(p.scheduled)::bigint as scheduled,
                sum(p.running)::bigint as running, sum(p.dead)::bigint as dead,
                min(p.oldest_ready) as oldest_ready,
                sum(p.c1)::bigint as c1, sum(p.c15)::bigint as c15, sum(p.c60)::bigint as c60,
                sum(p.r1)::bigint as r1, sum(p.r15)::bigint as r15, sum(p.r60)::bigint as r60,
                sum(p.d1)::bigint as d1, sum(p.d15)::bigint as d15, sum(p.d60)::bigint as d60,
                sum(p.run_count)::bigint as run_count, sum(p.run_ms) as run_ms,
                sum(p.lock_attempts)::bigint as lock_attempts,
                sum(p.lock_failures)::bigint as lock_failures,
                sum(p.rate_refusals)::bigint as rate_refusals,
                sum(p.waiting)::bigint as waiting
            from per_category as p group by p.queue
        ) as t
        left join queue_hists as qh on qh.queue = t.queue
    )
    select r.queue, r.category, r.ready, r.scheduled, r.running, r.dead,
        now() - r.oldest_ready,
        r.run_ms / nullif(r.run_count, 0),
        queue._hist_quantile(r.run_hist, 0.95),
        r.c1::bigint, r.c15::bigint, r.c60::bigint, r.r1::bigint, r.r15::bigint,
        r.r60::bigint, r.d1::bigint, r.d15::bigint, r.d60::bigint,
        (r.r60 + r.d60)::double precision / nullif(r.c60 + r.r60 + r.d60, 0),
        r.r60::double precision / nullif(r.c60 + r.d60, 0),
        r.lock_attempts, r.lock_failures,
        r.lock_failures::double precision / nullif(r.lock_attempts, 0),
        queue._hist_quantile(r.wait_hist, 0.50),
        queue._hist_quantile(r.wait_hist, 0.95),
        queue._hist_quantile(r.wait_hist, 0.99),
        case when r.total then v_wal end,
        coalesce(v_xmin_age, 0), coalesce(v_xmin_seconds, 0),
        coalesce((select q.paused from queue.queues as q where q.queue = r.queue), false),
        r.rate_refusals, r.waiting
    from rolled as r
    order by r.queue, r.category nulls first;
end
$$;

COMMENT ON FUNCTION queue.stats() IS 'Per queue and category: counts, run time, outcomes over 1m/15m/1h, failure rate, contention, pickup latency.';

CREATE FUNCTION queue.stats_by_minute(span interval DEFAULT '01:00:00'::interval) RETURNS TABLE(queue text, minute timestamp with time zone, completed bigint, retried bigint, dead bigint, failure_rate double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_from timestamptz;
begin
    perform queue._check_interval(stats_by_minute.span, 'span', true);
    if stats_by_minute.span > interval '1 day' then
        raise exception 'span must be at most 1 day (got %)', stats_by_minute.span
            using errcode = '22023', hint = 'The per-minute counters are kept for a day.';
    end if;
    v_from := date_trunc('minute', now() - stats_by_minute.span) + interval '1 minute';
    return query
    with m as (
        select s.queue, s.minute, sum(s.completed)::bigint as completed,
            sum(s.retried)::bigint as retried, sum(s.dead)::bigint as dead
        from queue.stat_minutes as s
        where s.minute >= v_from
        group by 1, 2
    )
    select q.queue, g.minute, coalesce(m.completed, 0), coalesce(m.retried, 0),
        coalesce(m.dead, 0),
        (m.retried + m.dead)::double precision / nullif(m.completed + m.retried + m.dead, 0)
    from (select distinct m.queue from m) as q
    cross join generate_series(v_from, date_trunc('minute', now()), interval '1 minute') as g (
        minute
    )
    left join m on m.queue = q.queue and m.minute = g.minute
    order by q.queue, g.minute;
end
$$;

COMMENT ON FUNCTION queue.stats_by_minute(span interval) IS 'Per queue and minute of the last span: attempts completed, retried and dead.';

CREATE FUNCTION queue.status() RETURNS TABLE(queue text, ready bigint, scheduled bigint, running bigint, dead bigint, oldest_ready_age interval)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    with live as (
        select c.queue, sum(c.ready)::bigint as ready, sum(c.scheduled)::bigint as scheduled,
            sum(c.running)::bigint as running, now() - min(c.oldest_ready) as oldest_ready_age
        from queue._live_counts() as c group by c.queue
    ),
    dead as (select d.queue, count(*) as dead from queue.dead_letters as d group by d.queue),
    names as (
        select l.queue from live as l
        union select d.queue from dead as d
        union select q.queue from queue.queues as q
    )
    select n.queue, coalesce(l.ready, 0), coalesce(l.scheduled, 0), coalesce(l.running, 0),
        coalesce(d.dead, 0), l.oldest_ready_age
    from names as n
    left join live as l on l.queue = n.queue
    left join dead as d on d.queue = n.queue
    order by n.queue
$$;

COMMENT ON FUNCTION queue.status() IS 'Per queue: ready, scheduled, running, dead, oldest ready age.';

CREATE FUNCTION queue.trace_contexts(job_ids bigint[]) RETURNS TABLE(job_id bigint, trace_context jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    if trace_contexts.job_ids is null then
        raise exception 'job_ids must not be null' using errcode = '22004';
    end if;
    if array_ndims(trace_contexts.job_ids) > 1 then
        raise exception 'job_ids must be a one-dimensional array' using errcode = '22023';
    end if;
    if cardinality(trace_contexts.job_ids) > 1000 then
        raise exception 'job_ids holds % ids, over the limit of 1000',
            cardinality(trace_contexts.job_ids)
            using errcode = '22023';
    end if;
    return query
    select j.id, j.trace_context from queue.jobs as j
    where j.id = any (trace_contexts.job_ids) and j.trace_context is not null;
end
$$;

COMMENT ON FUNCTION queue.trace_contexts(job_ids bigint[]) IS 'The producers'' trace contexts of live jobs (for a worker that traces).';

CREATE FUNCTION queue.unregister_worker(worker text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
begin
    perform queue._check_name(unregister_worker.worker, 'worker');
    delete from queue.worker_registrations as r where r.worker = unregister_worker.worker;
    return found;
end
$$;

COMMENT ON FUNCTION queue.unregister_worker(worker text) IS 'Remove a worker''s registration.';

CREATE FUNCTION queue.unschedule(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_task text;
begin
    perform queue._check_name(unschedule.name, 'name');
    select s.task into v_task from queue.schedules as s where s.name = unschedule.name;
    if v_task is not null then
        raise exception 'schedule % is andal''s own housekeeping and cannot be removed',
            unschedule.name
            using errcode = '55000',
            hint = 'Switch it off with queue.schedule(name => ..., every => ..., enabled => false).';
    end if;
    delete from queue.schedule_ticks as t where t.schedule = unschedule.name;
    delete from queue.schedules as s where s.name = unschedule.name;
    return found;
end
$$;

COMMENT ON FUNCTION queue.unschedule(name text) IS 'Remove a named schedule; true when there was one.';

CREATE FUNCTION queue.unserved_queues() RETURNS TABLE(queue text, ready bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    with served as (
        select q.name
        from queue.workers() as w
        left join queue.registered_workers() as r on r.worker = w.worker
        cross join lateral unnest(w.queues || coalesce(r.queues, '{}')) as q (name)
    )
    select c.queue, sum(c.ready)::bigint
    from queue._live_counts() as c
    where c.ready > 0 and c.queue not in (select s.name from served as s)
    group by c.queue
    order by c.queue
$$;

COMMENT ON FUNCTION queue.unserved_queues() IS 'Queues with ready jobs that no live worker holds a job of or registered for.';

CREATE FUNCTION queue.vacuum_due(every interval) RETURNS TABLE(schema_name text, table_name text, dead bigint, allowed boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform queue._check_interval(vacuum_due.every, 'every');
    return query
    select s.schemaname::text, coalesce(p.relname, c.relname)::text, sum(s.n_dead_tup)::bigint,
        bool_and(pg_has_role(session_user, coalesce(p.relowner, c.relowner), 'USAGE')
            or pg_has_role(session_user, d.datdba, 'USAGE'))
    from pg_stat_user_tables as s
    join pg_class as c on c.oid = s.relid
    left join pg_inherits as i on i.inhrelid = s.relid
    left join pg_class as p on p.oid = i.inhparent
    join pg_database as d on d.datname = current_database()
    where s.schemaname in ('queue', 'cache')
      and (s.n_dead_tup > 0 or s.n_mod_since_analyze > 0)
      and coalesce(greatest(s.last_vacuum, s.last_autovacuum), '-infinity')
          < now() - vacuum_due.every
    group by 1, 2
    order by 3 desc, 1, 2;
end
$$;

COMMENT ON FUNCTION queue.vacuum_due(every interval) IS 'andal''s tables changed and not vacuumed in the last `every`, and whether the caller may vacuum each.';

CREATE FUNCTION queue.version() RETURNS text
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select '0.2.0'::text $$;

COMMENT ON FUNCTION queue.version() IS 'The installed andal release.';

CREATE FUNCTION queue.watch(job_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
declare
    v_id bigint;
begin
    if watch.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    -- only for a live job (so the table holds no more rows than there are live jobs); a
    -- plain read of queue.jobs and an insert into queue.watches: no lock a worker waits on
    insert into queue.watches as w (job_id)
    select j.id from queue.jobs as j where j.id = watch.job_id
    on conflict (job_id) do nothing
    returning w.job_id into v_id;
    return v_id is not null
        or exists (select from queue.jobs as j where j.id = watch.job_id);
end
$$;

COMMENT ON FUNCTION queue.watch(job_id bigint) IS 'Ask for a NOTIFY andal_done when a job ends; true when it is still live.';

CREATE FUNCTION queue.workers() RETURNS TABLE(worker text, running bigint, queues text[], oldest_claim_age interval, next_lease_expiry interval, connections bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query
    with held as (
        select j.worker, count(*) as running, array_agg(distinct j.queue) as queues,
            now() - min(j.claimed_at) as oldest_claim_age,
            min(j.lease_expires_at) - now() as next_lease_expiry
        from queue.jobs as j
        where j.status = 'running' and j.worker is not null
        group by j.worker
    ),
    live as (
        select r.worker,
            array[left('andal ' || r.worker, 63), left('andal ' || r.worker || ' listen', 63),
                left('andal ' || r.worker || ' vacuum', 63)] as names
        from queue.worker_registrations as r
        where r.last_seen_at + r.expire_after >= now()
    ),
    sessions as (
        select l.worker, count(a.pid) as connections
        from live as l
        left join pg_catalog.pg_stat_activity as a
            on a.datname = pg_catalog.current_database() and a.application_name = any (l.names)
        group by l.worker
    )
    select coalesce(h.worker, s.worker), coalesce(h.running, 0), coalesce(h.queues, '{}'),
        h.oldest_claim_age, h.next_lease_expiry, coalesce(s.connections, 0)
    from held as h full join sessions as s on s.worker = h.worker
    order by 1;
end
$$;

COMMENT ON FUNCTION queue.workers() IS 'Per worker: running jobs, their queues, oldest claim, nearest lease expiry, open sessions.';

CREATE SEQUENCE cache.change_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE TABLE cache.config (
    id boolean DEFAULT true NOT NULL,
    default_ttl interval DEFAULT '01:00:00'::interval NOT NULL,
    min_ttl interval DEFAULT '00:00:01'::interval NOT NULL,
    max_ttl interval DEFAULT '01:00:00'::interval NOT NULL,
    ttl_factor double precision DEFAULT 0.5 NOT NULL,
    ewma_alpha double precision DEFAULT 0.3 NOT NULL,
    max_value_bytes integer DEFAULT 1048576 NOT NULL,
    log_keep interval DEFAULT '01:00:00'::interval NOT NULL,
    refresh_queues text[] DEFAULT '{}'::text[] NOT NULL,
    max_total_bytes bigint DEFAULT 1073741824 NOT NULL,
    CONSTRAINT config_default_ttl_check CHECK ((default_ttl > '00:00:00'::interval)),
    CONSTRAINT config_ewma_alpha_check CHECK (((ewma_alpha > (0)::double precision) AND (ewma_alpha <= (1)::double precision))),
    CONSTRAINT config_log_keep_check CHECK ((log_keep > '00:00:00'::interval)),
    CONSTRAINT config_max_total_bytes_check CHECK ((max_total_bytes > 0)),
    CONSTRAINT config_max_value_bytes_check CHECK ((max_value_bytes > 0)),
    CONSTRAINT config_min_ttl_check CHECK ((min_ttl > '00:00:00'::interval)),
    CONSTRAINT config_single CHECK (id),
    CONSTRAINT config_total_over_value_check CHECK ((max_total_bytes >= max_value_bytes)),
    CONSTRAINT config_ttl_bounds_check CHECK ((min_ttl <= max_ttl)),
    CONSTRAINT config_ttl_factor_check CHECK ((ttl_factor > (0)::double precision))
);

CREATE TABLE cache.deferred_writes (
    id bigint NOT NULL,
    key text NOT NULL,
    op text NOT NULL,
    value jsonb,
    reason text NOT NULL,
    deferred_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT deferred_writes_op_check CHECK ((op = ANY (ARRAY['put'::text, 'invalidate'::text])))
);

ALTER TABLE cache.deferred_writes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME cache.deferred_writes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE UNLOGGED TABLE cache.epoch (
    id boolean DEFAULT true NOT NULL,
    epoch bigint NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT epoch_single CHECK (id)
);

CREATE SEQUENCE cache.epoch_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE TABLE cache.log (
    seq bigint NOT NULL,
    xid xid8 NOT NULL,
    key text NOT NULL,
    op text NOT NULL,
    reason text,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT log_op_check CHECK ((op = ANY (ARRAY['put'::text, 'invalidate'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0.05', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_cost_delay='0');

CREATE TABLE cache.log_state (
    id boolean DEFAULT true NOT NULL,
    pruned_xid xid8 DEFAULT '0'::xid8 NOT NULL,
    pruned_at timestamp with time zone,
    CONSTRAINT log_state_single CHECK (id)
);

CREATE TABLE cache.read_stats (
    minute timestamp with time zone NOT NULL,
    pool text NOT NULL,
    job_type text NOT NULL,
    backend integer NOT NULL,
    local_hits bigint DEFAULT 0 NOT NULL,
    shared_hits bigint DEFAULT 0 NOT NULL,
    stale_hits bigint DEFAULT 0 NOT NULL,
    misses bigint DEFAULT 0 NOT NULL
);

CREATE UNLOGGED TABLE cache.source_changes (
    source oid NOT NULL,
    backend integer NOT NULL,
    changes bigint DEFAULT 0 NOT NULL,
    last_change_at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (fillfactor='50', autovacuum_vacuum_scale_factor='0.05', autovacuum_vacuum_cost_delay='0');

CREATE UNLOGGED TABLE cache.usage (
    slot bigint NOT NULL,
    bytes bigint DEFAULT 0 NOT NULL
)
WITH (fillfactor='50');

CREATE TABLE cache.usage_state (
    id boolean DEFAULT true NOT NULL,
    full_since timestamp with time zone,
    CONSTRAINT usage_state_single CHECK (id)
);

CREATE TABLE cache.view_sources (
    view regclass NOT NULL,
    source regclass NOT NULL
);

CREATE TABLE cache.views (
    view regclass NOT NULL,
    max_lag interval NOT NULL,
    max_changes bigint NOT NULL,
    seen_changes bigint DEFAULT 0 NOT NULL,
    registered_at timestamp with time zone DEFAULT now() NOT NULL,
    refreshed_at timestamp with time zone,
    last_duration interval,
    refreshes bigint DEFAULT 0 NOT NULL,
    CONSTRAINT views_max_changes_check CHECK ((max_changes >= 1)),
    CONSTRAINT views_max_lag_check CHECK ((max_lag > '00:00:00'::interval))
);

CREATE TABLE queue.categories (
    id bigint NOT NULL,
    category text NOT NULL,
    max_running integer DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    rate_starts integer,
    rate_per interval,
    rate_log timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    CONSTRAINT categories_max_running_check CHECK ((max_running >= 0)),
    CONSTRAINT categories_rate_check CHECK (((rate_starts IS NULL) = (rate_per IS NULL))),
    CONSTRAINT categories_rate_per_check CHECK ((rate_per > '00:00:00'::interval)),
    CONSTRAINT categories_rate_starts_check CHECK (((rate_starts >= 1) AND (rate_starts <= 10000)))
);

ALTER TABLE queue.categories ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME queue.categories_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE queue.completions (
    ids bigint[] NOT NULL,
    queues text[] NOT NULL,
    span int8range NOT NULL,
    completed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT completions_shape_check CHECK ((cardinality(ids) = cardinality(queues)))
);

CREATE TABLE queue.config (
    id boolean DEFAULT true NOT NULL,
    max_lease interval DEFAULT '1 day'::interval NOT NULL,
    max_delay interval DEFAULT '1 year'::interval NOT NULL,
    min_priority integer DEFAULT '-1000000'::integer NOT NULL,
    max_priority integer DEFAULT 1000000 NOT NULL,
    max_error_bytes integer DEFAULT 65536 NOT NULL,
    max_result_bytes integer DEFAULT 1048576 NOT NULL,
    CONSTRAINT config_max_delay_check CHECK (((max_delay > '00:00:00'::interval) AND (max_delay <= '100 years'::interval))),
    CONSTRAINT config_max_error_bytes_check CHECK ((max_error_bytes >= 1024)),
    CONSTRAINT config_max_lease_check CHECK (((max_lease > '00:00:00'::interval) AND (max_lease <= '100 years'::interval))),
    CONSTRAINT config_max_result_bytes_check CHECK ((max_result_bytes > 0)),
    CONSTRAINT config_priority_check CHECK (((min_priority <= 0) AND (max_priority >= 0))),
    CONSTRAINT config_single CHECK (id)
);

CREATE SEQUENCE queue.history_finished_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE TABLE queue.history (
    job_id bigint NOT NULL,
    queue text NOT NULL,
    category text,
    priority integer NOT NULL,
    state text NOT NULL,
    payload jsonb NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    enqueued_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    worker text,
    result jsonb,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    keep_until timestamp with time zone NOT NULL,
    finished_seq bigint DEFAULT nextval('queue.history_finished_seq'::regclass),
    CONSTRAINT history_state_check CHECK ((state = ANY (ARRAY['completed'::text, 'dead'::text, 'cancelled'::text])))
)
PARTITION BY RANGE (keep_until);

CREATE TABLE queue.history_default (
    job_id bigint NOT NULL,
    queue text NOT NULL,
    category text,
    priority integer NOT NULL,
    state text NOT NULL,
    payload jsonb NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    enqueued_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    worker text,
    result jsonb,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    keep_until timestamp with time zone NOT NULL,
    finished_seq bigint DEFAULT nextval('queue.history_finished_seq'::regclass),
    CONSTRAINT history_state_check CHECK ((state = ANY (ARRAY['completed'::text, 'dead'::text, 'cancelled'::text])))
);

CREATE TABLE queue.history_settings (
    id boolean DEFAULT true NOT NULL,
    partition_width interval DEFAULT '01:00:00'::interval NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT history_settings_single CHECK (id),
    CONSTRAINT history_settings_width_check CHECK ((partition_width >= '00:00:01'::interval))
);

CREATE TABLE queue.install_state (
    id boolean DEFAULT true NOT NULL,
    functions_digest text NOT NULL,
    installed_at timestamp with time zone DEFAULT now() NOT NULL,
    role_prefix text DEFAULT 'andal'::text NOT NULL,
    CONSTRAINT install_state_single CHECK (id)
);

CREATE TABLE queue.job_edges (
    parent_id bigint NOT NULL,
    child_id bigint NOT NULL,
    child_queue text NOT NULL,
    on_parent_failure text NOT NULL,
    CONSTRAINT job_edges_on_parent_failure_check CHECK ((on_parent_failure = ANY (ARRAY['cancel'::text, 'run'::text])))
)
WITH (fillfactor='80');

CREATE TABLE queue.jobs (
    id bigint NOT NULL,
    queue text NOT NULL,
    category text,
    priority integer DEFAULT 0 NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    payload jsonb NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL,
    dedup_key text,
    token uuid,
    worker text,
    claimed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    cache_key text,
    cache_version bigint,
    abort_requested_at timestamp with time zone,
    watched boolean DEFAULT false NOT NULL,
    timeout interval,
    trace_context jsonb,
    waiting_on integer DEFAULT 0 NOT NULL,
    workflow boolean DEFAULT false NOT NULL,
    has_parents boolean DEFAULT false NOT NULL,
    only_child bigint,
    CONSTRAINT jobs_running_check CHECK (((status <> 'running'::text) OR ((token IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT jobs_status_check CHECK ((status = ANY (ARRAY['waiting'::text, 'pending'::text, 'running'::text])))
)
PARTITION BY HASH (queue);

COMMENT ON TABLE queue.jobs IS 'Live jobs (scheduled, pending, failed awaiting retry, running), partitioned by hash (queue) into its shards (one when unsharded): see queue.set_shards.';

ALTER TABLE queue.jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME queue.jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE queue.jobs_p0 (
    id bigint NOT NULL,
    queue text NOT NULL,
    category text,
    priority integer DEFAULT 0 NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    payload jsonb NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL,
    dedup_key text,
    token uuid,
    worker text,
    claimed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    cache_key text,
    cache_version bigint,
    abort_requested_at timestamp with time zone,
    watched boolean DEFAULT false NOT NULL,
    timeout interval,
    trace_context jsonb,
    waiting_on integer DEFAULT 0 NOT NULL,
    workflow boolean DEFAULT false NOT NULL,
    has_parents boolean DEFAULT false NOT NULL,
    only_child bigint,
    CONSTRAINT jobs_running_check CHECK (((status <> 'running'::text) OR ((token IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT jobs_status_check CHECK ((status = ANY (ARRAY['waiting'::text, 'pending'::text, 'running'::text])))
)
WITH (fillfactor='70', autovacuum_vacuum_scale_factor='0.01', autovacuum_vacuum_threshold='1000', autovacuum_analyze_scale_factor='0.02', autovacuum_vacuum_cost_delay='0');

CREATE TABLE queue.lock_stats (
    minute timestamp with time zone NOT NULL,
    backend integer NOT NULL,
    category_id bigint NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL,
    failures bigint DEFAULT 0 NOT NULL,
    rate_refusals bigint DEFAULT 0 NOT NULL
);

CREATE TABLE queue.results (
    job_id bigint NOT NULL,
    queue text NOT NULL,
    result jsonb,
    completed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);

CREATE TABLE queue.schedule_ticks (
    schedule text NOT NULL,
    tick timestamp with time zone NOT NULL,
    job_id bigint,
    fired_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE queue.schedules (
    name text NOT NULL,
    queue text NOT NULL,
    cron text,
    every interval,
    timezone text DEFAULT 'UTC'::text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    category text,
    priority integer DEFAULT 0 NOT NULL,
    max_attempts integer,
    missed text DEFAULT 'latest'::text NOT NULL,
    catch_up integer DEFAULT 100 NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    task text,
    anchor timestamp with time zone DEFAULT date_trunc('second'::text, now()) NOT NULL,
    next_at timestamp with time zone,
    last_tick timestamp with time zone,
    last_fired_at timestamp with time zone,
    last_job_id bigint,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedules_catch_up_check CHECK (((catch_up >= 1) AND (catch_up <= 10000))),
    CONSTRAINT schedules_missed_check CHECK ((missed = ANY (ARRAY['latest'::text, 'all'::text]))),
    CONSTRAINT schedules_name_check CHECK (((length(name) >= 1) AND (length(name) <= 128))),
    CONSTRAINT schedules_when_check CHECK (((cron IS NULL) <> (every IS NULL)))
);

CREATE TABLE queue.schema_migrations (
    version text NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE UNLOGGED TABLE queue.sleepers (
    key integer NOT NULL,
    pid integer NOT NULL,
    sleeping boolean NOT NULL
);

CREATE TABLE queue.stat_minutes (
    minute timestamp with time zone NOT NULL,
    backend integer NOT NULL,
    queue text NOT NULL,
    category text DEFAULT ''::text NOT NULL,
    completed bigint DEFAULT 0 NOT NULL,
    retried bigint DEFAULT 0 NOT NULL,
    dead bigint DEFAULT 0 NOT NULL,
    run_count bigint DEFAULT 0 NOT NULL,
    run_ms double precision DEFAULT 0 NOT NULL,
    run_hist bigint[] NOT NULL,
    wait_hist bigint[] NOT NULL
)
WITH (fillfactor='50');

CREATE TABLE queue.wal_samples (
    sampled_at timestamp with time zone DEFAULT now() NOT NULL,
    wal_lsn pg_lsn NOT NULL
);

CREATE TABLE queue.watches (
    job_id bigint NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE queue.worker_locks (
    job_id bigint NOT NULL,
    category_id bigint NOT NULL,
    worker text NOT NULL,
    locked_at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (fillfactor='70', autovacuum_vacuum_scale_factor='0.01');

CREATE TABLE queue.worker_registrations (
    worker text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    queues text[] DEFAULT '{}'::text[] NOT NULL,
    slots integer NOT NULL,
    version text,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    expire_after interval DEFAULT '00:01:00'::interval NOT NULL,
    CONSTRAINT worker_registrations_expire_after_check CHECK ((expire_after > '00:00:00'::interval)),
    CONSTRAINT worker_registrations_pid_check CHECK ((pid >= 0)),
    CONSTRAINT worker_registrations_slots_check CHECK ((slots >= 0))
);

CREATE TABLE queue.workflow_results (
    job_id bigint NOT NULL,
    state text NOT NULL,
    result jsonb,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT workflow_results_state_check CHECK ((state = ANY (ARRAY['completed'::text, 'dead'::text, 'cancelled'::text])))
);

ALTER TABLE ONLY queue.history ATTACH PARTITION queue.history_default DEFAULT;

ALTER TABLE ONLY queue.jobs ATTACH PARTITION queue.jobs_p0 FOR VALUES WITH (modulus 1, remainder 0);

ALTER TABLE ONLY cache.config
    ADD CONSTRAINT config_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cache.deferred_writes
    ADD CONSTRAINT deferred_writes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cache.entries
    ADD CONSTRAINT entries_pkey PRIMARY KEY (key);

ALTER TABLE ONLY cache.epoch
    ADD CONSTRAINT epoch_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cache.log
    ADD CONSTRAINT log_pkey PRIMARY KEY (xid, seq);

ALTER TABLE ONLY cache.log_state
    ADD CONSTRAINT log_state_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cache.read_stats
    ADD CONSTRAINT read_stats_pkey PRIMARY KEY (minute, pool, job_type, backend);

ALTER TABLE ONLY cache.source_changes
    ADD CONSTRAINT source_changes_pkey PRIMARY KEY (source, backend);

ALTER TABLE ONLY cache.usage
    ADD CONSTRAINT usage_pkey PRIMARY KEY (slot);

ALTER TABLE ONLY cache.usage_state
    ADD CONSTRAINT usage_state_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cache.view_sources
    ADD CONSTRAINT view_sources_pkey PRIMARY KEY (view, source);

ALTER TABLE ONLY cache.views
    ADD CONSTRAINT views_pkey PRIMARY KEY (view);

ALTER TABLE ONLY queue.categories
    ADD CONSTRAINT categories_category_key UNIQUE (category);

ALTER TABLE ONLY queue.categories
    ADD CONSTRAINT categories_pkey PRIMARY KEY (id);

ALTER TABLE ONLY queue.config
    ADD CONSTRAINT config_pkey PRIMARY KEY (id);

ALTER TABLE ONLY queue.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (job_id);

ALTER TABLE ONLY queue.history_settings
    ADD CONSTRAINT history_settings_pkey PRIMARY KEY (id);

ALTER TABLE ONLY queue.install_state
    ADD CONSTRAINT install_state_pkey PRIMARY KEY (id);

ALTER TABLE ONLY queue.job_edges
    ADD CONSTRAINT job_edges_pkey PRIMARY KEY (parent_id, child_id);

ALTER TABLE ONLY queue.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, queue);

ALTER TABLE ONLY queue.jobs_p0
    ADD CONSTRAINT jobs_p0_pkey PRIMARY KEY (id, queue);

ALTER TABLE ONLY queue.lock_stats
    ADD CONSTRAINT lock_stats_pkey PRIMARY KEY (minute, backend, category_id);

ALTER TABLE ONLY queue.queues
    ADD CONSTRAINT queues_pkey PRIMARY KEY (queue);

ALTER TABLE ONLY queue.results
    ADD CONSTRAINT results_pkey PRIMARY KEY (job_id);

ALTER TABLE ONLY queue.schedule_ticks
    ADD CONSTRAINT schedule_ticks_pkey PRIMARY KEY (schedule, tick);

ALTER TABLE ONLY queue.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (name);

ALTER TABLE ONLY queue.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY queue.sleepers
    ADD CONSTRAINT sleepers_pkey PRIMARY KEY (key, pid);

ALTER TABLE ONLY queue.stat_minutes
    ADD CONSTRAINT stat_minutes_pkey PRIMARY KEY (minute, backend, queue, category);

ALTER TABLE ONLY queue.wal_samples
    ADD CONSTRAINT wal_samples_pkey PRIMARY KEY (sampled_at);

ALTER TABLE ONLY queue.watches
    ADD CONSTRAINT watches_pkey PRIMARY KEY (job_id);

ALTER TABLE ONLY queue.worker_locks
    ADD CONSTRAINT worker_locks_pkey PRIMARY KEY (job_id);

ALTER TABLE ONLY queue.worker_registrations
    ADD CONSTRAINT worker_registrations_pkey PRIMARY KEY (worker);

ALTER TABLE ONLY queue.workflow_results
    ADD CONSTRAINT workflow_results_pkey PRIMARY KEY (job_id);

CREATE INDEX log_at_idx ON cache.log USING brin (at);

CREATE INDEX read_stats_minute_idx ON cache.read_stats USING btree (minute);

CREATE INDEX view_sources_source_idx ON cache.view_sources USING btree (source);

CREATE INDEX categories_paused_idx ON queue.categories USING btree (id) WHERE (max_running = 0);

CREATE INDEX completions_at_idx ON queue.completions USING brin (completed_at);

CREATE INDEX completions_span_idx ON queue.completions USING gist (span);

CREATE INDEX dead_letters_died_idx ON queue.dead_letters USING btree (died_at);

CREATE INDEX dead_letters_queue_idx ON queue.dead_letters USING btree (queue, died_at);

CREATE INDEX history_job_idx ON ONLY queue.history USING btree (job_id);

CREATE INDEX history_default_job_id_idx ON queue.history_default USING btree (job_id);

CREATE INDEX history_queue_idx ON ONLY queue.history USING btree (queue, job_id);

CREATE INDEX history_default_queue_job_id_idx ON queue.history_default USING btree (queue, job_id);

CREATE INDEX job_edges_child_idx ON queue.job_edges USING btree (child_id);

CREATE UNIQUE INDEX jobs_dedup_idx ON ONLY queue.jobs USING btree (queue, dedup_key) WHERE (dedup_key IS NOT NULL);

CREATE INDEX jobs_gated_idx ON ONLY queue.jobs USING btree (priority DESC, available_at, id) WHERE ((status = 'pending'::text) AND (category IS NOT NULL));

CREATE INDEX jobs_gated_pair_idx ON ONLY queue.jobs USING btree ((ARRAY[queue, category]), priority DESC, available_at, id) WHERE ((status = 'pending'::text) AND (category IS NOT NULL));

CREATE INDEX jobs_gated_queue_idx ON ONLY queue.jobs USING btree (queue, priority DESC, available_at, id) WHERE ((status = 'pending'::text) AND (category IS NOT NULL));

CREATE INDEX jobs_lease_idx ON ONLY queue.jobs USING btree (lease_expires_at) WHERE (status = 'running'::text);

CREATE INDEX jobs_ready_idx ON ONLY queue.jobs USING btree (priority DESC, available_at, id) WHERE ((status = 'pending'::text) AND (category IS NULL));

CREATE INDEX jobs_ready_queue_idx ON ONLY queue.jobs USING btree (queue, priority DESC, available_at, id) WHERE ((status = 'pending'::text) AND (category IS NULL));

CREATE INDEX queues_paused_idx ON queue.queues USING btree (queue) WHERE paused;

CREATE INDEX results_completed_idx ON queue.results USING btree (completed_at);

CREATE INDEX schedule_ticks_fired_idx ON queue.schedule_ticks USING btree (fired_at);

CREATE INDEX schedules_due_idx ON queue.schedules USING btree (next_at) WHERE ((task IS NULL) AND (next_at IS NOT NULL));

CREATE INDEX schedules_due_queue_idx ON queue.schedules USING btree (queue, next_at) WHERE ((task IS NULL) AND (next_at IS NOT NULL));

CREATE INDEX stat_minutes_minute_idx ON queue.stat_minutes USING btree (minute);

CREATE INDEX worker_locks_category_idx ON queue.worker_locks USING btree (category_id);

ALTER INDEX queue.history_job_idx ATTACH PARTITION queue.history_default_job_id_idx;

ALTER INDEX queue.history_queue_idx ATTACH PARTITION queue.history_default_queue_job_id_idx;

ALTER TABLE ONLY cache.view_sources
    ADD CONSTRAINT view_sources_view_fkey FOREIGN KEY (view) REFERENCES cache.views(view) ON DELETE CASCADE;

GRANT USAGE ON SCHEMA cache TO andal_producer;
GRANT USAGE ON SCHEMA cache TO andal_worker;
GRANT USAGE ON SCHEMA cache TO andal_admin;
GRANT USAGE ON SCHEMA cache TO andal_monitor;

GRANT USAGE ON SCHEMA queue TO andal_producer;
GRANT USAGE ON SCHEMA queue TO andal_worker;
GRANT USAGE ON SCHEMA queue TO andal_admin;
GRANT USAGE ON SCHEMA queue TO andal_monitor;

REVOKE ALL ON FUNCTION cache._adaptive_ttl(mean_interval double precision, changed_at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._apply(key text, op text, value jsonb, ttl interval, reason text, if_version bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._apply_deferred(max_writes integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._apply_or_defer(key text, op text, value jsonb, reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._apply_update(key text, op text, value jsonb, ttl interval, reason text, entry cache.entries, checksum text, size integer, version bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._bound() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._cap() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._check_key(key text, argument text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._check_refresh_queue(queue_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._check_value(value jsonb, argument text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._current_version(key text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._enqueue_refresh(key text, queue_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._epoch() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._evict(need bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._full() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._hold_key(key text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._invalidate(key text, reason text, job_id bigint, token uuid, fenced boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._job_done(key text, policy text, result jsonb, reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._metrics() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._primary_only(fn text) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._put(key text, value jsonb, ttl interval, if_version bigint, job_id bigint, token uuid, fenced boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._set_full(is_full boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._track_changes() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._usage() FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._usage_add(delta bigint, part bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._view_changes(view regclass) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache._write_through(key text, value jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION cache.changes_since(watermark bigint, epoch bigint, lim integer, after_xid bigint, after_seq bigint, snapshot pg_snapshot) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.changes_since(watermark bigint, epoch bigint, lim integer, after_xid bigint, after_seq bigint, snapshot pg_snapshot) TO andal_worker;
GRANT ALL ON FUNCTION cache.changes_since(watermark bigint, epoch bigint, lim integer, after_xid bigint, after_seq bigint, snapshot pg_snapshot) TO andal_admin;

REVOKE ALL ON FUNCTION cache.get(key text, refresh_queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.get(key text, refresh_queue text) TO andal_worker;
GRANT ALL ON FUNCTION cache.get(key text, refresh_queue text) TO andal_admin;

REVOKE ALL ON FUNCTION cache.get_many(keys text[], refresh_queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.get_many(keys text[], refresh_queue text) TO andal_worker;
GRANT ALL ON FUNCTION cache.get_many(keys text[], refresh_queue text) TO andal_admin;

REVOKE ALL ON FUNCTION cache.invalidate(key text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.invalidate(key text, reason text) TO andal_worker;
GRANT ALL ON FUNCTION cache.invalidate(key text, reason text) TO andal_admin;

REVOKE ALL ON FUNCTION cache.invalidate(key text, job_id bigint, token uuid, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.invalidate(key text, job_id bigint, token uuid, reason text) TO andal_worker;
GRANT ALL ON FUNCTION cache.invalidate(key text, job_id bigint, token uuid, reason text) TO andal_admin;

REVOKE ALL ON FUNCTION cache.prune(log_keep interval, entries_keep interval) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.prune(log_keep interval, entries_keep interval) TO andal_admin;

REVOKE ALL ON FUNCTION cache.put(key text, value jsonb, ttl interval, if_version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.put(key text, value jsonb, ttl interval, if_version bigint) TO andal_producer;
GRANT ALL ON FUNCTION cache.put(key text, value jsonb, ttl interval, if_version bigint) TO andal_worker;
GRANT ALL ON FUNCTION cache.put(key text, value jsonb, ttl interval, if_version bigint) TO andal_admin;

REVOKE ALL ON FUNCTION cache.put(key text, value jsonb, job_id bigint, token uuid, ttl interval, if_version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.put(key text, value jsonb, job_id bigint, token uuid, ttl interval, if_version bigint) TO andal_producer;
GRANT ALL ON FUNCTION cache.put(key text, value jsonb, job_id bigint, token uuid, ttl interval, if_version bigint) TO andal_worker;
GRANT ALL ON FUNCTION cache.put(key text, value jsonb, job_id bigint, token uuid, ttl interval, if_version bigint) TO andal_admin;

REVOKE ALL ON FUNCTION cache.refill(key text, value jsonb, ttl interval, if_version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.refill(key text, value jsonb, ttl interval, if_version bigint) TO andal_producer;
GRANT ALL ON FUNCTION cache.refill(key text, value jsonb, ttl interval, if_version bigint) TO andal_worker;
GRANT ALL ON FUNCTION cache.refill(key text, value jsonb, ttl interval, if_version bigint) TO andal_admin;

REVOKE ALL ON FUNCTION cache.refresh_due() FROM PUBLIC;
GRANT ALL ON FUNCTION cache.refresh_due() TO andal_admin;

REVOKE ALL ON FUNCTION cache.refresh_view(view regclass) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.refresh_view(view regclass) TO andal_worker;
GRANT ALL ON FUNCTION cache.refresh_view(view regclass) TO andal_admin;

REVOKE ALL ON FUNCTION cache.register_view(view regclass, max_lag interval, max_changes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.register_view(view regclass, max_lag interval, max_changes bigint) TO andal_admin;

REVOKE ALL ON FUNCTION cache.report_reads(pool text, counts jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.report_reads(pool text, counts jsonb) TO andal_worker;
GRANT ALL ON FUNCTION cache.report_reads(pool text, counts jsonb) TO andal_admin;

REVOKE ALL ON FUNCTION cache.reset() FROM PUBLIC;
GRANT ALL ON FUNCTION cache.reset() TO andal_admin;

REVOKE ALL ON FUNCTION cache.stats(stale_after interval) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.stats(stale_after interval) TO andal_worker;
GRANT ALL ON FUNCTION cache.stats(stale_after interval) TO andal_admin;
GRANT ALL ON FUNCTION cache.stats(stale_after interval) TO andal_monitor;

REVOKE ALL ON FUNCTION cache.track(view regclass, source regclass) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.track(view regclass, source regclass) TO andal_admin;

REVOKE ALL ON FUNCTION cache.ttl_for(key text) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.ttl_for(key text) TO andal_worker;
GRANT ALL ON FUNCTION cache.ttl_for(key text) TO andal_admin;

REVOKE ALL ON FUNCTION cache.unregister_view(view regclass) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.unregister_view(view regclass) TO andal_admin;

REVOKE ALL ON FUNCTION cache.untrack(view regclass, source regclass) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.untrack(view regclass, source regclass) TO andal_admin;

REVOKE ALL ON FUNCTION cache.validate(keys text[], versions bigint[], checksums text[], loaded jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION cache.validate(keys text[], versions bigint[], checksums text[], loaded jsonb[]) TO andal_worker;
GRANT ALL ON FUNCTION cache.validate(keys text[], versions bigint[], checksums text[], loaded jsonb[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue._add_error(errors jsonb, entry jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._backoff(cfg queue.queues, attempt integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._bound_error(error text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._bury(job_id bigint, reason text, last_error text, errors jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._caller() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._candidates(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._category_id(category_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_fence(job_id bigint, token uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_interval(value interval, argument text, strict_positive boolean, required boolean, bound text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_json(value jsonb, argument text, bound bigint, over text, hint text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_name(value text, argument text, required boolean, max_length integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_names(names text[], argument text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_payload(payload jsonb, argument text, payload_limit integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_priority(priority integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_result(result jsonb, argument text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._check_trace_context(trace_context jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._claim(worker text, queues text[], batch integer, lease interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._claim_direct(worker text, queue_name text, batch integer, lease interval, v_now timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._claim_general(worker text, queues text[], batch integer, lease interval, v_now timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._complete_delete(job_ids bigint[], tokens uuid[], results_in jsonb[], now timestamp with time zone, OUT ids bigint[], OUT toks uuid[], OUT queues text[], OUT categories text[], OUT run_ms double precision[], OUT run_buckets integer[], OUT wait_buckets integer[], OUT span int8range, OUT settle boolean, OUT cache_keys text[], OUT results jsonb[], OUT history jsonb, OUT watched bigint[], OUT flow bigint[], OUT flow_results jsonb[], OUT flow_children bigint[], OUT flow_only bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._complete_one(job_id bigint, token uuid, result jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._completions_keep() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._config(queue_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._configure_queue(queue text, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text, timeout interval, results_retention interval, dead_retention interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._count_completed(queues text[], categories text[], run_ms double precision[], run_buckets integer[], wait_buckets integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._cron_field(part text, field text, lo integer, hi integer, names text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._cron_matches(minutes integer[], hours integer[], days integer[], months integer[], weekdays integer[], days_restricted boolean, weekdays_restricted boolean, wall timestamp without time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._cron_next(expr text, after timestamp with time zone, tz text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._cron_next_local(minutes integer[], hours integer[], days integer[], months integer[], weekdays integer[], days_restricted boolean, weekdays_restricted boolean, after timestamp without time zone, until timestamp without time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._cron_parse(expr text, OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT days_restricted boolean, OUT weekdays_restricted boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._cron_walk_minutes(minutes integer[], hours integer[], days integer[], months integer[], weekdays integer[], days_restricted boolean, weekdays_restricted boolean, hour_any boolean, tz text, after timestamp with time zone, starts timestamp with time zone[], span interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._dead_matching(queue_name text, reason_name text, older_than interval, max_rows integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._ended_state(reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_cache(job_id bigint, cache_key text, cache_value jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_check(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_lean(payload jsonb, queue text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_many(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[], timeout interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_many_check(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[], timeout interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_many_check_jobs(payloads jsonb[], queue text, dedup_keys text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._enqueue_many_keyed(payloads jsonb[], queue text, category text, priority integer, available_at timestamp with time zone, max_attempts integer, dedup_keys text[], timeout interval, OUT ids bigint[], OUT inserted boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._error_entry(attempt integer, error text, worker text, retry_in interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._fail(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._fire(schedule_name text, max_ticks integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._fire_due(queues text[], lim integer, max_ticks integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._fire_or_record(schedule_name text, max_ticks integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._forget_unused() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._free_slots(job_ids bigint[], queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._full_categories(at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gate(worker text, queues text[], batch integer, ids bigint[], cats text[], exclude text[], v_now timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gate_lock(categories text[], v_now timestamp with time zone, OUT names text[], OUT ids bigint[], OUT maxes integer[], OUT rates integer[], OUT rated boolean, OUT refused text[], OUT refused_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gate_take(worker text, ids bigint[], cats text[], take bigint[], lk_names text[], lk_ids bigint[], lk_max integer[], lk_rate integer[], v_now timestamp with time zone, OUT taken bigint[], OUT filled text[], OUT dropped boolean, OUT rate_refused bigint[], OUT ords integer[], OUT counts integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gated_head(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[], OUT ids bigint[], OUT categories text[], OUT priorities integer[], OUT availabilities timestamp with time zone[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gated_head_read(queues text[], head integer, exclude_categories text[], exclude_ids bigint[], OUT n integer, OUT ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gated_pairs(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._gated_scan(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._heartbeat(job_ids bigint[], tokens uuid[], extend interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._heartbeat_one(job_id bigint, token uuid, extend interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._hint_key(queue_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._hint_wanted(key integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._hist(ms double precision[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._hist_add(a bigint[], b bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._hist_bounds() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._hist_quantile(hist bigint[], q double precision) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._history_completed(jobs jsonb, finished_at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._history_keep(queue_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._history_roll() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._job_name(state text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._job_state(status text, due boolean, retried boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._json_fits(value jsonb, bound bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._json_number_chars(value numeric) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._json_numbers(value jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._json_size(value jsonb, bound bigint, OUT bytes bigint, OUT exact boolean, OUT longest_number bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._latest_tick(cron text, every interval, tz text, anchor timestamp with time zone, since timestamp with time zone, at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._lease_clock() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._lease_default() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._lease_lost(job_id bigint, token uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._lease_taken(worker text, job_ids bigint[], lease interval, v_now timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._limits(OUT max_lease interval, OUT max_delay interval, OUT min_priority integer, OUT max_priority integer, OUT max_error_bytes integer, OUT max_result_bytes integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._live_counts() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._live_state(status text, available_at timestamp with time zone, attempt integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._lock_down() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._maintain_failed(step text, state text, message text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._max_number_chars() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._next_tick(cron text, every interval, tz text, anchor timestamp with time zone, after timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._notify(channel text, payload text, anonymous text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._notify_ready(queue_name text, enabled boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._out_of_attempts(attempt integer, max_attempts integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._partition(OUT k integer, OUT n integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._pending_queues() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._prom_label(value text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._prune_completions() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._queue_defaults() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._rate_left(rate_log timestamp with time zone[], rate_starts integer, rate_per interval, at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._rate_record(category_ids bigint[], taken integer[], at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._reap(lim integer, queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._record(queue_name text, category_name text, completed integer, retried integer, dead integer, run_ms double precision[], wait_ms double precision[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._record_completions(ids bigint[], queues text[], span int8range, completed_at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._refusal(job_id bigint, token uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._refuse_read_only(call text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._remembered(job_id bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._retention(lim integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._run_task(task text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._run_tasks() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._says_nothing(q queue.queues, defaults queue.queues) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._scan(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._scan_queues(queues text[], lim integer, exclude_categories text[], exclude_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._set_partition(k integer, n integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._settle(job_id bigint, queue_name text, category_name text, outcome text, claimed_at timestamp with time zone, available_at timestamp with time zone, cache_key text, result jsonb, ready_at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._settle_counted(outcomes text[], queues text[], categories text[], claimed_ats timestamp with time zone[], available_ats timestamp with time zone[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._settle_many(job_ids bigint[], outcomes text[], queues text[], categories text[], claimed_ats timestamp with time zone[], available_ats timestamp with time zone[], cache_keys text[], results jsonb[], ready_ats timestamp with time zone[], counted boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._sleep(keys integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._stats_rollup() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._unpaused_queues(queues text[], batch integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_cancel(child_id bigint, parent_id bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_check(after bigint[], on_parent_failure text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_count_down(ids bigint[], queues text[], ns integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_ended(parents bigint[], children bigint[], reason text, results jsonb[], only_children bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_forget(children bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_keep(parents bigint[], reason text, results jsonb[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_requeue(job_id bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_revive(job_ids bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_sweep() FROM PUBLIC;

REVOKE ALL ON FUNCTION queue._workflow_wait(job_ids bigint[], job_queue text, parents bigint[], on_parent_failure text) FROM PUBLIC;

REVOKE ALL ON FUNCTION queue.busy() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.busy() TO andal_worker;
GRANT ALL ON FUNCTION queue.busy() TO andal_admin;

REVOKE ALL ON FUNCTION queue.cancel(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.cancel(job_id bigint) TO andal_admin;

REVOKE ALL ON FUNCTION queue.category_limits() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.category_limits() TO andal_admin;
GRANT ALL ON FUNCTION queue.category_limits() TO andal_worker;
GRANT ALL ON FUNCTION queue.category_limits() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.child_jobs(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.child_jobs(job_id bigint) TO andal_producer;
GRANT ALL ON FUNCTION queue.child_jobs(job_id bigint) TO andal_worker;
GRANT ALL ON FUNCTION queue.child_jobs(job_id bigint) TO andal_admin;
GRANT ALL ON FUNCTION queue.child_jobs(job_id bigint) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval, deadlines boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval, deadlines boolean) TO andal_worker;
GRANT ALL ON FUNCTION queue.claim(worker text, queues text[], batch integer, lease interval, deadlines boolean) TO andal_admin;

REVOKE ALL ON FUNCTION queue.complete(job_id bigint, token uuid, result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.complete(job_id bigint, token uuid, result jsonb) TO andal_worker;
GRANT ALL ON FUNCTION queue.complete(job_id bigint, token uuid, result jsonb) TO andal_admin;

REVOKE ALL ON FUNCTION queue.complete_many(job_ids bigint[], tokens uuid[], results jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.complete_many(job_ids bigint[], tokens uuid[], results jsonb[]) TO andal_worker;
GRANT ALL ON FUNCTION queue.complete_many(job_ids bigint[], tokens uuid[], results jsonb[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.complete_many_outcomes(job_ids bigint[], tokens uuid[], results jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.complete_many_outcomes(job_ids bigint[], tokens uuid[], results jsonb[]) TO andal_worker;
GRANT ALL ON FUNCTION queue.complete_many_outcomes(job_ids bigint[], tokens uuid[], results jsonb[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.complete_many_then_claim(job_ids bigint[], tokens uuid[], results jsonb[], worker text, queues text[], batch integer, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.complete_many_then_claim(job_ids bigint[], tokens uuid[], results jsonb[], worker text, queues text[], batch integer, lease interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.complete_many_then_claim(job_ids bigint[], tokens uuid[], results jsonb[], worker text, queues text[], batch integer, lease interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.configure_history(partition_width interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.configure_history(partition_width interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.configure_queue(queue text, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.configure_queue(queue text, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.configure_queue(queue text, timeout interval, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text, results_retention interval, dead_retention interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.configure_queue(queue text, timeout interval, max_attempts integer, lease interval, backoff text, backoff_base interval, backoff_cap interval, jitter real, notify boolean, payload_limit integer, keep_results boolean, cache_policy text, results_retention interval, dead_retention interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.dead_letters_by(queue text, reason text, before bigint, lim integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.dead_letters_by(queue text, reason text, before bigint, lim integer) TO andal_admin;
GRANT ALL ON FUNCTION queue.dead_letters_by(queue text, reason text, before bigint, lim integer) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.enqueue(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) TO andal_admin;

REVOKE ALL ON FUNCTION queue.enqueue(payload jsonb, timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb) TO andal_admin;

REVOKE ALL ON FUNCTION queue.enqueue(payload jsonb, trace_context jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, trace_context jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, trace_context jsonb, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_key text, cache_key text, cache_value jsonb, timeout interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.enqueue(payload jsonb, after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb, on_parent_failure text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb, on_parent_failure text) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue(payload jsonb, after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, cache_key text, cache_value jsonb, timeout interval, trace_context jsonb, on_parent_failure text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], timeout interval, queue text, category text, priority integer, delay interval, max_attempts integer, dedup_keys text[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, timeout interval, on_parent_failure text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, timeout interval, on_parent_failure text) TO andal_producer;
GRANT ALL ON FUNCTION queue.enqueue_many(payloads jsonb[], after bigint[], queue text, category text, priority integer, delay interval, max_attempts integer, timeout interval, on_parent_failure text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.fail(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.fail(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) TO andal_worker;
GRANT ALL ON FUNCTION queue.fail(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) TO andal_admin;

REVOKE ALL ON FUNCTION queue.fail_outcome(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.fail_outcome(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) TO andal_worker;
GRANT ALL ON FUNCTION queue.fail_outcome(job_id bigint, token uuid, error text, retry_in interval, retryable boolean) TO andal_admin;

REVOKE ALL ON FUNCTION queue.heartbeat(job_id bigint, token uuid, extend interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.heartbeat(job_id bigint, token uuid, extend interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.heartbeat(job_id bigint, token uuid, extend interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.heartbeat(job_id bigint, token uuid, report_abort boolean, extend interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.heartbeat(job_id bigint, token uuid, report_abort boolean, extend interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.heartbeat(job_id bigint, token uuid, report_abort boolean, extend interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], extend interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], extend interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], extend interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], report_abort boolean, extend interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], report_abort boolean, extend interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.heartbeat_many(job_ids bigint[], tokens uuid[], report_abort boolean, extend interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.idle(queues text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.idle(queues text[]) TO andal_worker;
GRANT ALL ON FUNCTION queue.idle(queues text[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.job(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.job(job_id bigint) TO andal_producer;
GRANT ALL ON FUNCTION queue.job(job_id bigint) TO andal_worker;
GRANT ALL ON FUNCTION queue.job(job_id bigint) TO andal_admin;
GRANT ALL ON FUNCTION queue.job(job_id bigint) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.job_origin(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.job_origin(job_id bigint) TO andal_producer;
GRANT ALL ON FUNCTION queue.job_origin(job_id bigint) TO andal_worker;
GRANT ALL ON FUNCTION queue.job_origin(job_id bigint) TO andal_admin;
GRANT ALL ON FUNCTION queue.job_origin(job_id bigint) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.job_payload(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.job_payload(job_id bigint) TO andal_admin;

REVOKE ALL ON FUNCTION queue.jobs_by(queue text, state text, before bigint, lim integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.jobs_by(queue text, state text, before bigint, lim integer) TO andal_producer;
GRANT ALL ON FUNCTION queue.jobs_by(queue text, state text, before bigint, lim integer) TO andal_worker;
GRANT ALL ON FUNCTION queue.jobs_by(queue text, state text, before bigint, lim integer) TO andal_admin;
GRANT ALL ON FUNCTION queue.jobs_by(queue text, state text, before bigint, lim integer) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.list_dead(queue text, lim integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.list_dead(queue text, lim integer) TO andal_admin;

REVOKE ALL ON FUNCTION queue.maintain() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.maintain() TO andal_worker;
GRANT ALL ON FUNCTION queue.maintain() TO andal_admin;

REVOKE ALL ON FUNCTION queue.metrics() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.metrics() TO andal_admin;
GRANT ALL ON FUNCTION queue.metrics() TO andal_worker;
GRANT ALL ON FUNCTION queue.metrics() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.next_available(queues text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.next_available(queues text[]) TO andal_worker;
GRANT ALL ON FUNCTION queue.next_available(queues text[]) TO andal_admin;
GRANT ALL ON FUNCTION queue.next_available(queues text[]) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.parent_results(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.parent_results(job_id bigint) TO andal_producer;
GRANT ALL ON FUNCTION queue.parent_results(job_id bigint) TO andal_worker;
GRANT ALL ON FUNCTION queue.parent_results(job_id bigint) TO andal_admin;
GRANT ALL ON FUNCTION queue.parent_results(job_id bigint) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.pause(queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.pause(queue text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.purge_dead(older_than interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.purge_dead(older_than interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.purge_dead_jobs(job_ids bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.purge_dead_jobs(job_ids bigint[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.purge_dead_matching(queue text, reason text, older_than interval, max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.purge_dead_matching(queue text, reason text, older_than interval, max_rows integer) TO andal_admin;

REVOKE ALL ON FUNCTION queue.queue_settings(queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.queue_settings(queue text) TO andal_admin;
GRANT ALL ON FUNCTION queue.queue_settings(queue text) TO andal_worker;
GRANT ALL ON FUNCTION queue.queue_settings(queue text) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.rate_limits() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.rate_limits() TO andal_admin;
GRANT ALL ON FUNCTION queue.rate_limits() TO andal_worker;
GRANT ALL ON FUNCTION queue.rate_limits() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.refusals(job_ids bigint[], tokens uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.refusals(job_ids bigint[], tokens uuid[]) TO andal_worker;
GRANT ALL ON FUNCTION queue.refusals(job_ids bigint[], tokens uuid[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.register_worker(worker text, host text, pid integer, queues text[], slots integer, version text, expire_after interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.register_worker(worker text, host text, pid integer, queues text[], slots integer, version text, expire_after interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.register_worker(worker text, host text, pid integer, queues text[], slots integer, version text, expire_after interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.registered_workers() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.registered_workers() TO andal_worker;
GRANT ALL ON FUNCTION queue.registered_workers() TO andal_admin;
GRANT ALL ON FUNCTION queue.registered_workers() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.release(job_id bigint, token uuid, delay interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.release(job_id bigint, token uuid, delay interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.release(job_id bigint, token uuid, delay interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.requeue_dead(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.requeue_dead(job_id bigint) TO andal_admin;

REVOKE ALL ON FUNCTION queue.requeue_dead(job_id bigint, with_children boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.requeue_dead(job_id bigint, with_children boolean) TO andal_admin;

REVOKE ALL ON FUNCTION queue.requeue_dead_matching(queue text, reason text, older_than interval, max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.requeue_dead_matching(queue text, reason text, older_than interval, max_rows integer) TO andal_admin;

REVOKE ALL ON FUNCTION queue.resume(queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.resume(queue text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.roles() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.roles() TO andal_producer;
GRANT ALL ON FUNCTION queue.roles() TO andal_worker;
GRANT ALL ON FUNCTION queue.roles() TO andal_admin;
GRANT ALL ON FUNCTION queue.roles() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.schedule(name text, queue text, cron text, every interval, payload jsonb, timezone text, category text, priority integer, max_attempts integer, missed text, catch_up integer, enabled boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.schedule(name text, queue text, cron text, every interval, payload jsonb, timezone text, category text, priority integer, max_attempts integer, missed text, catch_up integer, enabled boolean) TO andal_admin;

REVOKE ALL ON FUNCTION queue.schedules() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.schedules() TO andal_admin;
GRANT ALL ON FUNCTION queue.schedules() TO andal_worker;
GRANT ALL ON FUNCTION queue.schedules() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.set_category_limit(category text, max_running integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.set_category_limit(category text, max_running integer) TO andal_admin;

REVOKE ALL ON FUNCTION queue.set_history(queue text, retention interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.set_history(queue text, retention interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.set_rate_limit(category text, starts integer, per interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.set_rate_limit(category text, starts integer, per interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.set_shards(shards integer) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.set_shards(shards integer) TO andal_admin;

REVOKE ALL ON FUNCTION queue.shard_of(queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.shard_of(queue text) TO andal_producer;
GRANT ALL ON FUNCTION queue.shard_of(queue text) TO andal_worker;
GRANT ALL ON FUNCTION queue.shard_of(queue text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.shards() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.shards() TO andal_admin;

REVOKE ALL ON FUNCTION queue.states() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.states() TO andal_producer;
GRANT ALL ON FUNCTION queue.states() TO andal_worker;
GRANT ALL ON FUNCTION queue.states() TO andal_admin;
GRANT ALL ON FUNCTION queue.states() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.stats() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.stats() TO andal_admin;
GRANT ALL ON FUNCTION queue.stats() TO andal_worker;
GRANT ALL ON FUNCTION queue.stats() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.stats_by_minute(span interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.stats_by_minute(span interval) TO andal_admin;
GRANT ALL ON FUNCTION queue.stats_by_minute(span interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.stats_by_minute(span interval) TO andal_monitor;

REVOKE ALL ON FUNCTION queue.status() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.status() TO andal_admin;
GRANT ALL ON FUNCTION queue.status() TO andal_worker;
GRANT ALL ON FUNCTION queue.status() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.trace_contexts(job_ids bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.trace_contexts(job_ids bigint[]) TO andal_worker;
GRANT ALL ON FUNCTION queue.trace_contexts(job_ids bigint[]) TO andal_admin;

REVOKE ALL ON FUNCTION queue.unregister_worker(worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.unregister_worker(worker text) TO andal_worker;
GRANT ALL ON FUNCTION queue.unregister_worker(worker text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.unschedule(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.unschedule(name text) TO andal_admin;

REVOKE ALL ON FUNCTION queue.unserved_queues() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.unserved_queues() TO andal_admin;
GRANT ALL ON FUNCTION queue.unserved_queues() TO andal_worker;
GRANT ALL ON FUNCTION queue.unserved_queues() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.vacuum_due(every interval) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.vacuum_due(every interval) TO andal_worker;
GRANT ALL ON FUNCTION queue.vacuum_due(every interval) TO andal_admin;

REVOKE ALL ON FUNCTION queue.version() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.version() TO andal_producer;
GRANT ALL ON FUNCTION queue.version() TO andal_worker;
GRANT ALL ON FUNCTION queue.version() TO andal_admin;
GRANT ALL ON FUNCTION queue.version() TO andal_monitor;

REVOKE ALL ON FUNCTION queue.watch(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION queue.watch(job_id bigint) TO andal_producer;
GRANT ALL ON FUNCTION queue.watch(job_id bigint) TO andal_worker;
GRANT ALL ON FUNCTION queue.watch(job_id bigint) TO andal_admin;

REVOKE ALL ON FUNCTION queue.workers() FROM PUBLIC;
GRANT ALL ON FUNCTION queue.workers() TO andal_admin;
GRANT ALL ON FUNCTION queue.workers() TO andal_worker;
GRANT ALL ON FUNCTION queue.workers() TO andal_monitor;
