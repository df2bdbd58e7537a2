-- With if_version a put writes only if the key is still at that version (0: no entry), and
-- returns null otherwise: a refill after a miss never overwrites a newer write.
begin;
\ir ../_fixtures.psql
select plan(6);

select ok(cache.put('k', '"first"', if_version => 0) is not null, 'if_version 0 on a new key writes');
select is(cache.put('k', '"late refill"', if_version => 0), null::bigint,
    'if_version 0 on an existing key returns null');
select is((select value from cache.get('k')), '"first"'::jsonb, 'and writes nothing');

select cache.invalidate('k') as inv \gset
select is(cache.put('k', '"stale refill"', if_version => :inv - 1), null::bigint,
    'an older if_version is refused');
select ok(cache.put('k', '"refill"', if_version => :inv) > :inv, 'the current version writes');
select is((select value from cache.get('k')), '"refill"'::jsonb, 'the refill is stored');

select * from finish();
rollback;
