-- While a queue is paused, a claim of every queue still takes the jobs of queues whose
-- policy row was forgotten (queue.maintain forgets rows equal to the defaults): the queues
-- with pending jobs are found from the live table, not from queue.queues.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}', queue => 'plain') as plain \gset
select queue.enqueue('{}', queue => 'gated', category => 'c') as gated \gset
select queue.enqueue('{}', queue => 'p') \g /dev/null
delete from queue.queues where queue in ('plain', 'gated');
select queue.pause(queue => 'p') \g /dev/null

create temp table got as select * from queue.claim('w', batch => 10);
select is((select array_agg(job_id order by job_id) from got),
    array[:plain, :gated]::bigint[], 'both queues without a policy row are claimed');
select is((select count(*) from got where queue = 'p'), 0::bigint, 'the paused one is not');
select is((select count(*) from queue.jobs where queue = 'p' and status = 'pending'), 1::bigint,
    'its job waits');

select * from finish();
rollback;
