-- The shared cache's size bound (cache.config.max_total_bytes): the running sum of the
-- stored sizes of the cached values, kept in cache.usage, and the eviction that keeps it
-- under the bound. Private, granted to nobody; called by cache._apply (the one write path),
-- cache.prune and cache.reset.

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

-- _evict: free at least `need` bytes by dropping the values of other keys than `keep`:
-- expired entries first, then those nearest to expiry. An evicted entry keeps its row as a
-- tombstone (its version and change statistics stay, stale, value null, reason 'evicted'),
-- so a refill guarded by an older if_version is still refused; it writes no log row and
-- sends no notification (the value a local cache holds at that version is still right).
-- Entries other transactions hold are skipped. Reads every entry with a value (one scan
-- and sort): it runs when a write takes the sum over the bound, and frees a tenth of the
-- bound at once. Returns the bytes freed.
create or replace function cache._evict(keep text, need bigint) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_freed bigint;
begin
    with ranked as (
        select e.key, e.size,
            sum(e.size) over (order by e.expires_at, e.key) - e.size as before
        from cache.entries as e
        where e.value is not null and e.key <> keep
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

-- _bound: evict when the sum is over cache.config.max_total_bytes (a missing settings row:
-- the column's default, 1 GiB), keeping `key` (the one just written). cache._apply calls it
-- on one write in 64 (by version, which no caller chooses) and on every write of 64 kB or
-- more, so the bound may be passed by the writes since the last check (under 64 writes of
-- under 64 kB each, per writer) and by those of transactions not yet committed.
create or replace function cache._bound(key text) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_cap bigint;
    v_used bigint;
begin
    v_cap := coalesce((select c.max_total_bytes from cache.config as c), 1073741824);
    v_used := cache._usage();
    if v_used > v_cap then
        perform cache._evict(key, v_used - v_cap + v_cap / 10);
    end if;
end
$$;

revoke all on function cache._usage_add(bigint, bigint) from public;
revoke all on function cache._usage() from public;
revoke all on function cache._evict(text, bigint) from public;
revoke all on function cache._bound(text) from public;
