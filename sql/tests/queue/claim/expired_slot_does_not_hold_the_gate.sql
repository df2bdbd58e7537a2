-- The gate never counts a slot whose lease has expired: a job of category c whose lease
-- expired in queue a does not hold c's slot against a claim of queue b (which does not take
-- back queue a's leases).
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}', queue => 'a', category => 'c') as stuck \gset
select queue.enqueue('{}', queue => 'b', category => 'c') as next \gset
select is((select job_id from queue.claim('w1', queues => '{a}')), :stuck::bigint,
    'queue a takes the category''s one slot');
select is((select job_id from queue.claim('w2', queues => '{b}')), null::bigint,
    'while its lease holds, queue b gets nothing');
select andal_test.expire(:stuck) \g /dev/null
select is((select job_id from queue.claim('w2', queues => '{b}')), :next::bigint,
    'once it expired, queue b gets the slot before queue a is reaped');

select * from finish();
rollback;
