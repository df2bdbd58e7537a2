-- The cache's total size is bounded by cache.config.max_total_bytes: the counted total
-- (cache.usage) always equals the sum of the entries' counted sizes; a put that takes it
-- over the bound evicts other keys' values, expired first, then the nearest expiry, until a
-- tenth of the bound is free; an evicted key keeps its version as a tombstone, so an old
-- refill is still refused. Rewrites, invalidations, prune and reset keep the count right.
begin;
\ir ../_fixtures.psql
select plan(16);

create function andal_cache_test.counted() returns bigint language sql as $$
    select coalesce(sum(bytes), 0)::bigint from cache.usage $$;
create function andal_cache_test.sizes() returns bigint language sql as $$
    select coalesce(sum(size), 0)::bigint from cache.entries $$;

update cache.config set max_value_bytes = 100000, max_total_bytes = 700000;
-- nine values of about 70 kB (each write of 64 kB or more checks the bound), k1 expiring first
select cache.put(key => 'k' || i, value => to_jsonb(repeat('x', 70000)),
    ttl => make_interval(mins => i)) from generate_series(1, 9) as i \g /dev/null
select is(andal_cache_test.counted(), andal_cache_test.sizes(), 'the total is counted');
select is((select size from cache.entries where key = 'k1'),
    pg_column_size(to_jsonb(repeat('x', 70000))), 'an entry counts its size as written');
select is((select count(*) from cache.entries where value is null), 0::bigint,
    'under the bound nothing is evicted');

-- k9 expired: it goes first, then the nearest expiry (k1, ...)
update cache.entries set expires_at = now() - interval '1 second' where key = 'k9';
select version as k9_version from cache.entries where key = 'k9' \gset
select cache.put(key => 'new1', value => to_jsonb(repeat('y', 70000))) \g /dev/null
select cache.put(key => 'new2', value => to_jsonb(repeat('y', 70000))) \g /dev/null
select ok(andal_cache_test.counted() <= 700000, 'the total is back under the bound');
select is(andal_cache_test.counted(), andal_cache_test.sizes(), 'evictions are counted');
select is((select value is null and stale and reason = 'evicted' from cache.entries
    where key = 'k9'), true, 'the expired entry went first, kept as a tombstone');
select is((select version from cache.entries where key = 'k9'), :k9_version::bigint,
    'an evicted key keeps its version');
select is((select value is null from cache.entries where key = 'k1'), true,
    'then the entry nearest to expiry');
select is((select count(*) from cache.entries where value is not null and key like 'new%'),
    2::bigint, 'the written values stay');
select ok((select value is not null from cache.entries where key = 'k8'),
    'entries further from expiry stay');
select is(cache.put(key => 'k9', value => '1', if_version => 0), null,
    'a refill of a key that had no entry is refused after the key''s eviction');

-- a smaller rewrite, an invalidation, prune and reset keep the count right
select cache.put(key => 'k8', value => '1') \g /dev/null
select cache.invalidate(key => 'k7') \g /dev/null
select is(andal_cache_test.counted(), andal_cache_test.sizes(),
    'rewrites and invalidations are counted');
select cache.prune(entries_keep => '0') \g /dev/null
select is(andal_cache_test.counted(), andal_cache_test.sizes(), 'prune takes its rows off');
select cache.reset() \g /dev/null
select is(andal_cache_test.counted(), 0::bigint, 'reset empties the count');

-- small writes (1 MB in all): the bound is checked on one write in 64
update cache.config set max_total_bytes = 100000;
select cache.put(key => 's' || i, value => to_jsonb(repeat('s', 5000)))
from generate_series(1, 200) as i \g /dev/null
select ok(andal_cache_test.counted() <= 100000 + 64 * 5100,
    'small writes pass the bound by at most the writes between two checks');

select throws_ok($$ update cache.config set max_total_bytes = 99999 $$, '23514', null,
    'the bound is at least one value''s limit');

select * from finish();
rollback;
