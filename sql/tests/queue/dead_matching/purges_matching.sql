-- purge_dead_matching deletes the dead letters matching every filter, oldest first, at most
-- max_rows per call, and nothing else.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.enqueue('{}', queue => 'pa') as a1 \gset
select queue.enqueue('{}', queue => 'pa') as a2 \gset
select queue.enqueue('{}', queue => 'pa', max_attempts => 1) as a3 \gset
select queue.enqueue('{}', queue => 'pb') as b1 \gset
select queue.enqueue('{}', queue => 'pb') as live \gset
select queue.cancel(:a1) \g /dev/null
select queue.cancel(:a2) \g /dev/null
select queue.cancel(:b1) \g /dev/null
select job_id, token from queue.claim(worker => 'w', queues => '{pa}') \gset c_
select queue.fail(job_id => :c_job_id, token => :'c_token', error => 'no') \g /dev/null
-- a1 died two days ago, a2 one hour ago
update queue.dead_letters set died_at = now() - interval '2 days' where job_id = :a1;
update queue.dead_letters set died_at = now() - interval '1 hour' where job_id = :a2;

select is(queue.purge_dead_matching(queue => 'pa', reason => 'cancelled',
    older_than => '1 day'), 1::bigint, 'queue, reason and age: the one of two days ago');
select results_eq($$ select job_id from queue.dead_letters order by job_id $$,
    format('values (%s::bigint), (%s::bigint), (%s::bigint)', :a2, :a3, :b1),
    'the others stay');
select is(queue.purge_dead_matching(reason => 'exhausted'), 1::bigint, 'by reason alone');
select is(queue.purge_dead_matching(queue => 'nope'), 0::bigint, 'an unknown queue: none');
select is(queue.purge_dead_matching(max_rows => 1), 1::bigint, 'at most max_rows per call');
select results_eq($$ select job_id from queue.dead_letters $$, array[:b1::bigint],
    'the oldest went first (a2, dead an hour ago)');
select results_eq($$ select id from queue.jobs $$, array[:live::bigint],
    'a live job is never touched');

select * from finish();
rollback;
