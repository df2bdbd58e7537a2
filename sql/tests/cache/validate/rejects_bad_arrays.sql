-- cache.validate: 22004 for null arrays or a null version, 22023 for arrays of different
-- lengths.
begin;
\ir ../_fixtures.psql
select plan(4);

select throws_ok($$ select * from cache.validate(null, '{}') $$, '22004',
    'keys and versions must not be null', 'null keys');
select throws_ok($$ select * from cache.validate('{a}', '{1,2}') $$, '22023',
    'keys, versions, checksums and loaded must have the same length', 'lengths differ');
select throws_ok($$ select * from cache.validate('{a}', '{1}', checksums => '{x,y}') $$, '22023',
    'keys, versions, checksums and loaded must have the same length', 'checksums length');
select throws_ok($$ select * from cache.validate('{a}', array[null]::bigint[]) $$, '22004',
    'versions must not contain null', 'null version');

select * from finish();
rollback;
