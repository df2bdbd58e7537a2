-- status reports per queue the ready, scheduled, running and dead jobs and the age of the
-- oldest ready job; configured queues without jobs appear with zeros.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.configure_queue('empty') \g /dev/null
select queue.enqueue_many(array_fill('{}'::jsonb, array[3]), queue => 'a') \g /dev/null
update queue.jobs set available_at = now() - interval '10 minutes'
where id = (select min(id) from queue.jobs);
select queue.enqueue('{}', queue => 'a', delay => interval '1 hour') \g /dev/null
select queue.claim('w', queues => '{a}') \g /dev/null
select queue.cancel(queue.enqueue('{}', queue => 'b')) \g /dev/null

select results_eq(
    $$ select queue, ready, scheduled, running, dead from queue.status() $$,
    $$ values ('a', 2::bigint, 1::bigint, 1::bigint, 0::bigint),
              ('b', 0, 0, 0, 1),
              ('empty', 0, 0, 0, 0) $$,
    'one row per queue with its counts');
select is((select oldest_ready_age from queue.status() where queue = 'a'), interval '0',
    'the oldest ready job (the older one was claimed) became ready now');

select * from finish();
rollback;
