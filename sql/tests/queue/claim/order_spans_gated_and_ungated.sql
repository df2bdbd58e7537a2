-- Claim order (priority, then availability, then id) holds across gated and ungated jobs: a
-- job's category never lowers its rank, so a backlog of ungated jobs cannot starve the
-- categories, and a batch comes back in that one order. Each part starts from an empty
-- queue table, for queues => null, one queue and several queues.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.set_category_limit('c', 10) \g /dev/null

-- queues => null
select queue.enqueue('{}', priority => 0) \g /dev/null
select queue.enqueue('{}', category => 'c', priority => 10) as gated_high \gset
select is((select job_id from queue.claim('w')), :gated_high::bigint,
    'every queue: a gated job of higher priority goes before an ungated one');
delete from queue.worker_locks;
delete from queue.jobs;

-- One queue, same priority: the older job first, whether gated or not.
select queue.enqueue('{}', queue => 'q', category => 'c') as gated_old \gset
select queue.enqueue('{}', queue => 'q') \g /dev/null
update queue.jobs set available_at = now() - interval '1 hour' where id = :gated_old;
update queue.jobs set available_at = now() - interval '1 minute' where id <> :gated_old;
select is((select job_id from queue.claim('w', queues => '{q}')), :gated_old::bigint,
    'one queue: an older gated job goes before a newer ungated one of the same priority');
delete from queue.worker_locks;
delete from queue.jobs;

-- Several queues: a batch over both kinds comes back in claim order.
select queue.enqueue('{"n": "g5"}', queue => 'a', category => 'c', priority => 5) \g /dev/null
select queue.enqueue('{"n": "p7"}', queue => 'b', priority => 7) \g /dev/null
select queue.enqueue('{"n": "g3"}', queue => 'b', category => 'c', priority => 3) \g /dev/null
select queue.enqueue('{"n": "p1"}', queue => 'a', priority => 1) \g /dev/null
select results_eq(
    $$ select payload ->> 'n' from queue.claim('w', queues => '{a,b}', batch => 3) $$,
    array['p7', 'g5', 'g3'],
    'several queues: a batch interleaves gated and ungated jobs in claim order');
select is((select payload ->> 'n' from queue.claim('w', queues => '{a,b}')), 'p1',
    'then the last one');

select * from finish();
rollback;
