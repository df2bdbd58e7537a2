-- cache.put stores a value and returns the key's new version; versions grow with every write,
-- the entry is fresh, expires after the given ttl, and carries md5 of its JSON text.
begin;
\ir ../_fixtures.psql
select plan(8);

select cache.put('k', '{"a": 1}', ttl => interval '30 seconds') as v1 \gset
select cache.put('k', '{"a": 2}', ttl => interval '30 seconds') as v2 \gset
select cache.put('other', '[1, 2]') as v3 \gset

select cmp_ok(:v2::bigint, '>', :v1::bigint, 'a second write gets a higher version');
select cmp_ok(:v3::bigint, '>', :v2::bigint, 'versions come from one sequence');
select is((select value from cache.get('k')), '{"a": 2}'::jsonb, 'get returns the last value');
select is((select version from cache.get('k')), :v2::bigint, 'and its version');
select is((select stale from cache.get('k')), false, 'a fresh entry is not stale');
select is((select expires_at from cache.get('k')), now() + interval '30 seconds',
    'it expires after ttl');
select is((select checksum from cache.get('k')), md5('{"a": 2}'::jsonb::text),
    'checksum is md5 of the JSON text');
select is((select count(*) from cache.entries), 2::bigint, 'one entry per key');

select * from finish();
rollback;
