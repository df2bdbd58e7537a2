-- A batch completed by queue.complete_many is remembered job by job for an hour, with each
-- job's own queue, in one row of queue.completions; a job whose lease was lost in the batch
-- is not taken for completed.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue_many(array['{}', '{}', '{}']::jsonb[], queue => 'a') \g /dev/null
select queue.enqueue('{}', queue => 'b') \g /dev/null
create temp table got as select * from queue.claim('w', queues => '{a,b}', batch => 10);
select is((select count(*)::int from got), 4, 'four jobs claimed');
create temp table late as select job_id from got order by job_id desc limit 1;
update queue.jobs set lease_expires_at = now() - interval '1 second'
where id = (select job_id from late);
select is((select count(*)::int from queue.complete_many(
        (select array_agg(job_id order by job_id) from got),
        (select array_agg(token order by job_id) from got)) where completed), 3,
    'three completed, the one past its lease refused');
select is((select count(*)::int from queue.completions), 1, 'one row for the batch');
select results_eq(
    $$ select j.state, j.queue from got cross join lateral queue.job(got.job_id) as j
       where got.job_id <> (select job_id from late) order by got.job_id $$,
    $$ values ('completed', 'a'), ('completed', 'a'), ('completed', 'a') $$,
    'each completed job answers completed, with its queue');
select isnt((select state from queue.job((select job_id from late))), 'completed',
    'the refused one is not taken for completed');
select is((select finished_at from queue.job((select min(job_id) from got))),
    (select completed_at from queue.completions), 'its finish time is the batch''s');

select * from finish();
rollback;
