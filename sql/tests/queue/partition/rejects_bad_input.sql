-- _set_partition refuses a partition count that is not a power of two (22023), a partition
-- outside [0, n) (22023), null (22004), and live jobs whose ids belong to another partition
-- (55000); a refusal changes neither the jobs nor the numbering.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.enqueue('{}', queue => 'a') from generate_series(1, 2) \g /dev/null
select andal_test.state() as before \gset

select throws_ok('select queue._set_partition(0, 3)', '22023', null, 'three: 22023');
select throws_ok('select queue._set_partition(0, 0)', '22023', null, 'zero: 22023');
select throws_ok('select queue._set_partition(2, 2)', '22023', null, 'k = n: 22023');
select throws_ok('select queue._set_partition(-1, 2)', '22023', null, 'negative k: 22023');
select throws_ok('select queue._set_partition(null, 2)', '22004', null, 'null: 22004');
select throws_ok('select queue._set_partition(0, 2)', '55000', null,
    'live ids of both residues: 55000');
select is(andal_test.state(), :'before', 'no job changed');

select * from finish();
rollback;
