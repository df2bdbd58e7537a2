-- requeue_dead refuses (55000) when a live job of the queue already holds the dead job's
-- dedup_key, and leaves the dead letter in place.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}', dedup_key => 'k') as j \gset
select queue.cancel(:j) \g /dev/null
select queue.enqueue('{}', dedup_key => 'k') as live \gset
select andal_test.state() as before \gset

select throws_ok(format('select queue.requeue_dead(%s)', :j), '55000',
    'a live job of queue default already holds dedup_key k', 'key held: 55000');
select is(andal_test.state(), :'before', 'nothing changed');
select is((select count(*) from queue.dead_letters where job_id = :j), 1::bigint,
    'the dead letter is still there');

select * from finish();
rollback;
