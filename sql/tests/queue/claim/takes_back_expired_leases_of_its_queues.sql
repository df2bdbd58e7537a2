-- A claim of listed queues takes back the expired leases of those queues only (on a sharded
-- install it reads only their shards); a claim of every queue, and queue.maintain(), take
-- back every queue's.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'a') as a \gset
select queue.enqueue('{}', queue => 'b') as b \gset
select queue.claim('w1', queues => '{a,b}', batch => 2) \g /dev/null
select andal_test.expire(:a) \g /dev/null
select andal_test.expire(:b) \g /dev/null

select is((select job_id from queue.claim('w2', queues => '{a}')), :a::bigint,
    'a claim of a takes back a''s expired lease');
select is((select status from queue.jobs where id = :b), 'running',
    'but leaves b''s alone');
select is((select job_id from queue.claim('w2', queues => '{c,d}')), null,
    'a claim of other queues leaves it too');
select is((select status from queue.jobs where id = :b), 'running', 'still running');
select is(queue.maintain(), 1, 'queue.maintain() takes it back');
select is((select job_id from queue.claim('w3')), :b::bigint,
    'and a claim of every queue gets it');

select * from finish();
rollback;
