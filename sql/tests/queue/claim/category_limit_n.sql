-- With set_category_limit(c, 3) at most 3 jobs of c run at once, over any number of claims.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.set_category_limit('c', 3) \g /dev/null
select queue.enqueue_many(array_fill('{}'::jsonb, array[6]), category => 'c') \g /dev/null

select is((select count(*) from queue.claim('w1', batch => 2)), 2::bigint, 'batch 2: 2 run');
select is((select count(*) from queue.claim('w2', batch => 10)), 1::bigint,
    'the next claim gets only the third slot');
select is(andal_test.running('c'), 3::bigint, '3 running');
select is_empty($$ select * from queue.claim('w3', batch => 10) $$, 'then nothing');

select id as j, token as t from queue.jobs where status = 'running' order by id limit 1 \gset
select queue.release(:j, :'t', delay => interval '1 hour') \g /dev/null
select is((select count(*) from queue.claim('w4', batch => 10)), 1::bigint,
    'a released slot is taken by exactly one job');
select is(andal_test.running('c'), 3::bigint, 'still 3 running');

select * from finish();
rollback;
