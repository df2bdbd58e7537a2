-- cache.get_many answers one row per key that has an entry, with the same stale rules as
-- cache.get; a null array or element is 22004.
begin;
\ir ../_fixtures.psql
select plan(4);

select cache.put('a', '1') \g /dev/null
select cache.put('b', '2') \g /dev/null
select cache.invalidate('b') \g /dev/null

select results_eq($$ select key, value, stale from cache.get_many('{a,b,c,a}') order by key $$,
    $$ values ('a', '1'::jsonb, false), ('b', '2'::jsonb, true) $$,
    'existing keys only, stale flagged');
select is_empty($$ select * from cache.get_many('{}') $$, 'no keys, no rows');
select throws_ok($$ select * from cache.get_many(null) $$, '22004', 'keys must not be null',
    'null array');
select throws_ok($$ select * from cache.get_many(array['a', null]) $$, '22004',
    'keys element must not be null', 'null element');

select * from finish();
rollback;
