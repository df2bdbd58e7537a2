-- The shared cache's size bound (cache.config.max_total_bytes): the running sum of the
-- sizes of the cached values, kept in cache.usage; whether the cache is full
-- (cache.usage_state); and the eviction that cache.prune runs to bring it back under the
-- bound. Private, granted to nobody; called by cache._apply (the one write path),
-- cache.prune and cache.reset.
--
-- No writer evicts in its own transaction: the evicted rows would stay locked until it
-- ends, and a writer that then waited for a key another session holds, while that session
-- waited for an evicted row, would deadlock. Writers only count, mark the cache full and
-- wake cache.prune, never waiting for a lock (SKIP LOCKED); cache.prune evicts in a short
-- transaction of its own that waits for nobody.

-- _usage_add: add delta bytes to the sum, in one of the session's own 64 slots (chosen by
-- `part` mod 64): no other live session uses them, so a writer never waits for another's
-- commit, and the versions a long transaction's updates leave are spread over 64 rows.
create or replace function cache._usage_add(delta bigint, part bigint) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- _usage: the sum as this transaction sees it (the committed writes of others and its own;
-- writes of transactions still open elsewhere are not in it yet).
create or replace function cache._usage() returns bigint
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(sum(u.bytes), 0)::bigint from cache.usage as u
$$;

-- _evict: free at least `need` bytes by dropping the values of the entries: expired ones
-- first, then those nearest to expiry. An evicted entry keeps its row as a tombstone (its
-- version and change statistics stay, stale, value null, reason 'evicted'), so a refill
-- guarded by an older if_version is still refused; it writes no log row and sends no
-- notification (the value a local cache holds at that version is still right). Entries
-- other transactions hold are skipped. Reads and sorts every entry with a value. Returns
-- the bytes freed.
create or replace function cache._evict(need bigint) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- _cap: cache.config.max_total_bytes (a missing settings row: the column's default, 1 GiB).
create or replace function cache._cap() returns bigint
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce((select c.max_total_bytes from cache.config as c), 1073741824)
$$;

-- _set_full: mark the cache full (or not), unless another open transaction holds the mark
-- (it is changing it already); never waits. Marking it full also wakes the housekeeping
-- schedule andal.cache_prune (due now, unless it is held or switched off).
create or replace function cache._set_full(is_full boolean) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- _full: whether a new value may not be stored now: the cache was marked full and the sum
-- is still over the bound. A mark the sum no longer bears out (values pruned, the bound
-- raised, a crash emptied the cache) is cleared.
create or replace function cache._full() returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- _bound: after a write that added bytes, mark the cache full when the sum is over the
-- bound. cache._apply calls it on one write in 64 (by version, which no caller chooses) and
-- on every write of 64 kB or more, so the bound may be passed by the writes since the last
-- check (under 64 writes of under 64 kB each, per writer) and by those of transactions not
-- yet committed.
create or replace function cache._bound() returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if cache._usage() > cache._cap() then
        perform cache._set_full(true);
    end if;
end
$$;

revoke all on function cache._usage_add(bigint, bigint) from public;
revoke all on function cache._usage() from public;
revoke all on function cache._evict(bigint) from public;
revoke all on function cache._cap() from public;
revoke all on function cache._set_full(boolean) from public;
revoke all on function cache._full() from public;
revoke all on function cache._bound() from public;
