-- A category has a limit of 1 by default: one running job at a time, whatever the batch, and
-- the slot is held by a worker_locks row until the job completes.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.enqueue_many(array_fill('{}'::jsonb, array[3]), category => 'c') \g /dev/null

select job_id as j, token as t from queue.claim('w1', batch => 10) \gset
select is(andal_test.running('c'), 1::bigint, 'batch 10 of 3 gated jobs: only 1 runs');
select is((select count(*) from queue.worker_locks where job_id = :j), 1::bigint,
    'the running job holds a gate slot');
select is_empty($$ select * from queue.claim('w2', batch => 10) $$,
    'a second claimer gets nothing while the slot is taken');

select queue.complete(:j, :'t') \g /dev/null
select is((select count(*) from queue.worker_locks), 0::bigint, 'complete frees the slot');
select job_id as j, token as t from queue.claim('w2', batch => 10) \gset
select is(andal_test.running('c'), 1::bigint, 'the next job runs, still only one');

select queue.fail(:j, :'t', 'boom', retry_in => interval '1 hour') \g /dev/null
select is((select count(*) from queue.claim('w3', batch => 10)), 1::bigint,
    'fail frees the slot: the last job runs');
select is(andal_test.running('c'), 1::bigint, 'one running');

select * from finish();
rollback;
