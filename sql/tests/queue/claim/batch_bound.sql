-- claim returns at most `batch` jobs and marks exactly those running.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue_many(array_fill('{}'::jsonb, array[5])) \g /dev/null

select is((select count(*) from queue.claim('w', batch => 3)), 3::bigint, 'batch 3 of 5: 3');
select is((select count(*) from queue.jobs where status = 'running'), 3::bigint,
    'exactly the claimed jobs are running');
select is((select count(*) from queue.claim('w', batch => 3)), 2::bigint, 'then the 2 left');
select is((select count(*) from queue.claim('w', batch => 3)), 0::bigint, 'then none');

select queue.enqueue_many(array_fill('{}'::jsonb, array[1200])) \g /dev/null
select is((select count(*) from queue.claim('w', batch => 1000)), 1000::bigint,
    'batch 1000 (the maximum) returns 1000');
select is((select count(*) from queue.claim('w')), 1::bigint, 'batch defaults to 1');

select * from finish();
rollback;
