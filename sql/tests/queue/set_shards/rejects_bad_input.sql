-- set_shards rejects a null (22004) or out-of-range (22023) shard count and changes nothing:
-- not the jobs, not the layout.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}', queue => 'a') \g /dev/null
select andal_test.state() as before \gset
select count(*) as layout from queue.shards() \gset

select throws_ok('select queue.set_shards(shards => null)', '22004',
    'shards must not be null', 'null: 22004');
select throws_ok('select queue.set_shards(shards => 0)', '22023',
    'shards must be between 1 and 64 (got 0)', 'zero: 22023');
select throws_ok('select queue.set_shards(shards => 65)', '22023',
    'shards must be between 1 and 64 (got 65)', 'too many: 22023');
select is(andal_test.state(), :'before', 'no job changed');
select is((select count(*) from queue.shards()), :'layout'::bigint, 'the layout is unchanged');

select * from finish();
rollback;
