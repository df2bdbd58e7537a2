-- Bad input at claim: batch < 1 or > 1000, bad worker or queue names, non-positive lease are
-- 22023 (a null worker 22004); each message names the argument and nothing is written.
begin;
\ir ../_fixtures.psql
select plan(11);

select queue.enqueue('{}') \g /dev/null
select andal_test.state() as before \gset

select throws_ok($$ select * from queue.claim('w', batch => 0) $$, '22023',
    'batch must be between 1 and 1000 (got 0)', 'batch 0');
select throws_ok($$ select * from queue.claim('w', batch => 1001) $$, '22023',
    'batch must be between 1 and 1000 (got 1001)', 'batch 1001');
select throws_ok($$ select * from queue.claim('w', batch => -5) $$, '22023',
    'batch must be between 1 and 1000 (got -5)', 'negative batch');
select throws_ok($$ select * from queue.claim(null) $$, '22004',
    'worker must not be null', 'null worker: 22004');
select throws_ok($$ select * from queue.claim('') $$, '22023',
    'worker must be 1 to 128 characters long (got 0)', 'empty worker');
select throws_ok(format('select * from queue.claim(%L)', repeat('w', 129)), '22023',
    'worker must be 1 to 128 characters long (got 129)', 'over-long worker');
select throws_ok($$ select * from queue.claim('w', queues => array['a', null]) $$, '22023',
    'queues must hold queue names (1 to 128 characters, no nulls)', 'a null queue name');
select throws_ok($$ select * from queue.claim('w', queues => array['']) $$, '22023',
    'queues must hold queue names (1 to 128 characters, no nulls)', 'an empty queue name');
select throws_ok($$ select * from queue.claim('w', lease => interval '0') $$, '22023',
    'lease must be positive (got 00:00:00)', 'zero lease');
select throws_ok($$ select * from queue.claim('w', lease => interval '-1 minute') $$, '22023',
    'lease must be positive (got -00:01:00)', 'negative lease');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
