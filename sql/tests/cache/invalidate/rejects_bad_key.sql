-- cache.invalidate: 22004 for a null key, 22023 for an empty one; nothing is written.
begin;
\ir ../_fixtures.psql
select plan(3);

select andal_cache_test.state() as before \gset
select throws_ok($$ select cache.invalidate(null) $$, '22004', 'key must not be null',
    'null key');
select throws_ok($$ select cache.invalidate('') $$, '22023',
    'key must be 1 to 512 characters long (got 0)', 'empty key');
select is(andal_cache_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
