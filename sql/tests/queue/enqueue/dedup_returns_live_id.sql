-- A dedup_key held by a live (pending or running) job of the same queue returns that job's id
-- and inserts nothing; other queues and finished jobs do not hold the key.
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{"v": 1}', dedup_key => 'k') as j1 \gset
select queue.enqueue('{"v": 2}', dedup_key => 'k') as j2 \gset

select is(:j2::bigint, :j1::bigint, 'same key, same queue: the existing id');
select is((select count(*) from queue.jobs), 1::bigint, 'nothing inserted');
select is((select payload from queue.jobs where id = :j1), '{"v": 1}'::jsonb,
    'the existing job is unchanged');

select queue.enqueue('{}', queue => 'other', dedup_key => 'k') as j3 \gset
select isnt(:j3::bigint, :j1::bigint, 'the key is per queue');

-- A running job still holds the key.
select token as t1 from queue.claim('w', queues => '{default}') \gset
select is(queue.enqueue('{}', dedup_key => 'k'), :j1::bigint, 'a running job holds the key');

-- Once it completed the key is free again.
select queue.complete(:j1, :'t1') \g /dev/null
select queue.enqueue('{"v": 3}', dedup_key => 'k') as j4 \gset
select isnt(:j4::bigint, :j1::bigint, 'after completion the key makes a new job');
select is((select count(*) from queue.jobs where dedup_key = 'k' and queue = 'default'),
    1::bigint, 'one live job with the key');

-- A dead job does not hold the key either.
select queue.cancel(:j4) \g /dev/null
select isnt(queue.enqueue('{}', dedup_key => 'k'), :j4::bigint,
    'after dead-lettering the key makes a new job');

select * from finish();
rollback;
