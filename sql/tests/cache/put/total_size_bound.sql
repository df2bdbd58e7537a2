-- The cache's total size is bounded by cache.config.max_total_bytes: the counted total
-- (cache.usage) always equals the sum of the entries' counted sizes. A write that takes it
-- over the bound marks the cache full: further puts store nothing and return null, a
-- write-through invalidates the key instead, until cache.prune evicts values (expired
-- first, then the nearest expiry) down to nine tenths of the bound. An evicted key keeps
-- its version as a tombstone, so an old refill is still refused. Rewrites, invalidations,
-- prune and reset keep the count right.
begin;
\ir ../_fixtures.psql
select plan(21);

create function andal_cache_test.counted() returns bigint language sql as $$
    select coalesce(sum(bytes), 0)::bigint from cache.usage $$;
create function andal_cache_test.sizes() returns bigint language sql as $$
    select coalesce(sum(size), 0)::bigint from cache.entries $$;
create function andal_cache_test.full() returns boolean language sql as $$
    select full_since is not null from cache.usage_state $$;

update cache.config set max_value_bytes = 100000, max_total_bytes = 700000;
-- nine values of about 70 kB (each write of 64 kB or more checks the bound), k1 expiring first
select cache.put(key => 'k' || i, value => to_jsonb(repeat('x', 70000)),
    ttl => make_interval(mins => i)) from generate_series(1, 9) as i \g /dev/null
select is(andal_cache_test.counted(), andal_cache_test.sizes(), 'the total is counted');
select is((select size from cache.entries where key = 'k1'),
    pg_column_size(to_jsonb(repeat('x', 70000))), 'an entry counts its size as written');
select is(andal_cache_test.full(), false, 'under the bound the cache is not full');

-- k9 expired: it goes first, then the nearest expiry (k1, ...)
update cache.entries set expires_at = now() - interval '1 second' where key = 'k9';
select version as k9_version from cache.entries where key = 'k9' \gset
update queue.schedules set next_at = now() + interval '1 hour' where name = 'andal.cache_prune';
select cache.put(key => 'new1', value => to_jsonb(repeat('y', 70000))) \g /dev/null
select is(andal_cache_test.full(), true, 'the write that passed the bound marks it full');
select ok((select next_at <= now() from queue.schedules where name = 'andal.cache_prune'),
    'and wakes the housekeeping that evicts');
select andal_cache_test.state() as before \gset
select is(cache.put(key => 'new2', value => '1'), null, 'a full cache stores no new value');
select is(andal_cache_test.state(), :'before', 'the put wrote nothing');
select queue.enqueue(payload => '{}', queue => 'q', cache_key => 'k8',
    cache_value => '"fresh"') \g /dev/null
select is((select stale and value = to_jsonb(repeat('x', 70000)) from cache.entries
    where key = 'k8'), true, 'a write-through into a full cache invalidates the key instead');

select cache.prune() \g /dev/null
select ok(andal_cache_test.counted() <= 630000, 'prune evicts down to nine tenths');
select is(andal_cache_test.counted(), andal_cache_test.sizes(), 'evictions are counted');
select is(andal_cache_test.full(), false, 'then the cache is not full');
select is((select value is null and stale and reason = 'evicted' from cache.entries
    where key = 'k9'), true, 'the expired entry went first, kept as a tombstone');
select is((select version from cache.entries where key = 'k9'), :k9_version::bigint,
    'an evicted key keeps its version');
select is((select value is null from cache.entries where key = 'k1'), true,
    'then the entry nearest to expiry');
select ok((select value is not null from cache.entries where key = 'new1'),
    'entries further from expiry stay');
select is(cache.put(key => 'k9', value => '1', if_version => 0), null,
    'a refill of a key that had no entry is refused after the key''s eviction');
select ok(cache.put(key => 'new2', value => '1') > 0, 'puts are taken again');

-- a smaller rewrite, an invalidation, prune and reset keep the count right
select cache.put(key => 'new1', value => '1') \g /dev/null
select cache.invalidate(key => 'k7') \g /dev/null
select is(andal_cache_test.counted(), andal_cache_test.sizes(),
    'rewrites and invalidations are counted');
select cache.prune(entries_keep => '0') \g /dev/null
select is(andal_cache_test.counted(), andal_cache_test.sizes(), 'prune takes its rows off');
select cache.reset() \g /dev/null
select is(andal_cache_test.counted(), 0::bigint, 'reset empties the count');

select throws_ok($$ update cache.config set max_total_bytes = 99999 $$, '23514', null,
    'the bound is at least one value''s limit');

select * from finish();
rollback;
