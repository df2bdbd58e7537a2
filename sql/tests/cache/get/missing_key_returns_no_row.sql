-- cache.get answers no row for a key that has no entry, and raises 22004 for a null key.
begin;
\ir ../_fixtures.psql
select plan(2);

select is_empty($$ select * from cache.get('nope') $$, 'no row for a missing key');
select throws_ok($$ select * from cache.get(null) $$, '22004', 'key must not be null',
    'null key');

select * from finish();
rollback;
