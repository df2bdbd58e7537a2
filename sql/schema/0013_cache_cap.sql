-- 0013: a bound on the shared cache's total size. Run once, never edited after release (add
-- a new number instead).
--
-- * cache.config.max_total_bytes (default 1 GiB, at least max_value_bytes): the bound on the
--   sum of the sizes of the cached values. Past it the cache is full (cache.usage_state):
--   new values are not stored (cache.put returns null; a write-through invalidates the key)
--   until cache.prune, woken at once, has evicted other keys' values (expired first, then
--   the nearest expiry) down to nine tenths of the bound; see cache._evict.
-- * cache.entries.size: the stored size of the entry's value as it was counted (0 for a
--   tombstone), so a rewrite or an eviction takes off exactly what was added.
-- * cache.usage: the sum, spread over rows (slots): each session adds to 64 slots of its
--   own (pid * 64 + the write's version mod 64), so concurrent writers never wait for each
--   other's commit and a transaction of many writes does not pile every row version of its
--   updates onto one row; the sum is over every slot, and cache.prune folds the slots into
--   slot 0. UNLOGGED like cache.entries: a crash empties both.

alter table cache.config
add column max_total_bytes bigint not null default 1073741824
constraint config_max_total_bytes_check check (max_total_bytes > 0),
add constraint config_total_over_value_check check (max_total_bytes >= max_value_bytes);

alter table cache.entries add column size int not null default 0;
update cache.entries as e set size = pg_catalog.pg_column_size(e.value)
where e.value is not null;

create unlogged table cache.usage (
    slot bigint primary key,
    bytes bigint not null default 0
) with (fillfactor = 50);
insert into cache.usage (slot, bytes)
select
    0 as slot,
    coalesce(sum(e.size), 0) as bytes
from cache.entries as e;

revoke all on cache.usage from public;

-- Whether the cache is full: full_since is set by the write that found the sum over the
-- bound and cleared once it is back under it. One row, always there.
create table cache.usage_state (
    id boolean primary key default true constraint usage_state_single check (id),
    full_since timestamptz
);
insert into cache.usage_state default values;

revoke all on cache.usage_state from public;
