-- Only invalidations and overwrites of a fresh value with a different one count as changes:
-- refilling an invalidated key, or rewriting the same value, does not shorten its TTL.
begin;
\ir ../_fixtures.psql
select plan(3);

select cache.put('k', '1') \g /dev/null
select cache.put('k', '1') \g /dev/null
select is((select changes from cache.entries where key = 'k'), 0::bigint, 'same value: no change');
select cache.put('k', '2') \g /dev/null
select is((select changes from cache.entries where key = 'k'), 1::bigint,
    'a different value over a fresh one: a change');
select cache.invalidate('k') \g /dev/null
select cache.put('k', '3') \g /dev/null
select is((select changes from cache.entries where key = 'k'), 2::bigint,
    'invalidate then refill: one change, not two');

select * from finish();
rollback;
