-- cache._apply: the one body behind every cache write (put, invalidate, write-through, job
-- completion, read-repair). Arguments are checked by the callers.
--
-- op 'put' stores `value` (fresh, expiring after `ttl`, or the adaptive TTL when null);
-- op 'invalidate' marks the key stale and keeps its old value (a tombstone when it had none).
-- Guarantees:
-- * The key's row is locked before its new version is drawn from cache.change_seq, so the
--   versions of one key grow in commit order.
-- * In the same transaction it appends (seq = the new version, xid = the writer's top-level
--   transaction id) to cache.log, and sends one NOTIFY per transaction on channel
--   'andal_cache' whose payload is that xid (a hint; readers resume from their watermark).
-- * With if_version (0 = the key has no row) nothing is written unless the key is still at
--   that version: a refill never overwrites a newer write. Returns null then (and for a
--   put into a full cache, below).
-- * The entry's counted size (cache.entries.size, the size of its value as written) is
--   added to the cache's total (cache.usage). While the total is over
--   cache.config.max_total_bytes (the cache is full, see _usage.sql) a put writes nothing
--   and returns null (as when if_version no longer matches: a refill then simply does not
--   cache), and a write-through (a put with a reason: an enqueue's cache_value, a job's
--   result) invalidates the key instead, so that the enqueue or the completion still
--   succeeds and readers reload.
-- Returns the new version. A key that has a row is written by cache._apply_update.
create or replace function cache._apply(
    key text, op text, value jsonb, ttl interval, reason text, if_version bigint default null
) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- cache._apply_update: cache._apply's write of a key that has a row (entry: the row, locked
-- by the caller, still at the caller's if_version) at its new version (drawn by the caller
-- from cache.change_seq): the key's rate of change (changes, changed_at and the mean
-- interval between changes, an exponentially weighted average by cache.config.ewma_alpha)
-- when the value changes or is invalidated, and the row updated: for op 'put' the new value
-- (its md5 checksum, size bytes, fresh for ttl or the adaptive TTL), for op 'invalidate'
-- stale with its old value. Returns the bytes the key's counted size grew by. Used by
-- cache._apply (a scalar answer: an assignment, where a record of OUT parameters cost a
-- query's overhead more per write).
create or replace function cache._apply_update(
    key text, op text, value jsonb, ttl interval, reason text, entry cache.entries,
    checksum text, size int, version bigint
) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

comment on function cache._apply(text, text, jsonb, interval, text, bigint) is
'Write (put) or invalidate a key: new version, log row and NOTIFY hint in the caller''s transaction.';
revoke all on function cache._apply(text, text, jsonb, interval, text, bigint) from public;
revoke all on function cache._apply_update(
    text, text, jsonb, interval, text, cache.entries, text, int, bigint
) from public;
