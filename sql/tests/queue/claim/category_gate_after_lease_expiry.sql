-- The gate holds across a lease expiry: an expired job of a full category is taken back and
-- its slot passes to exactly one new run; a running job with a live lease keeps its slot.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.set_category_limit('c', 2) \g /dev/null
select queue.enqueue_many(array_fill('{}'::jsonb, array[4]), category => 'c') \g /dev/null
create temp table first as select * from queue.claim('w1', batch => 10);
select is((select count(*) from first), 2::bigint, 'two slots, two runs');

select job_id as lapsed from first order by job_id limit 1 \gset
select andal_test.expire(:lapsed) \g /dev/null
create temp table second as select * from queue.claim('w2', batch => 10);
select is((select count(*) from second), 1::bigint,
    'after one lease lapsed exactly one new run starts');
select is(andal_test.running('c'), 2::bigint, 'still 2 running');
select is((select count(*) from queue.worker_locks), 2::bigint, 'two slot rows');
select ok(
    (select count(*) = 2 from queue.worker_locks as w join queue.jobs as j on j.id = w.job_id
     where j.status = 'running' and j.lease_expires_at > now()),
    'each slot row belongs to a running job with a live lease');
select is_empty($$ select * from queue.claim('w3', batch => 10) $$, 'then nothing more');

select * from finish();
rollback;
