-- Every claim issues a new fencing token; the lease is the claim time (the database's current
-- time, within the transaction) + the lease argument, else the queue's configured lease, else
-- 60 seconds; the worker name is recorded.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{}') as j \gset
select clock_timestamp() as before \gset
select token as t1, lease_expires_at as l1 from queue.claim('w1') \gset
select claimed_at as c1 from queue.jobs where id = :j \gset
select isnt(:'t1'::uuid, null, 'claim returns a token');
select is(:'l1'::timestamptz, :'c1'::timestamptz + interval '60 seconds',
    'default lease: 60 seconds');
select ok(:'c1'::timestamptz between :'before'::timestamptz and clock_timestamp()
    and (select (token, worker) = (:'t1'::uuid, 'w1') from queue.jobs where id = :j),
    'the job records token, worker and claim time (the current time, not the transaction''s)');

select queue.release(:j, :'t1') \g /dev/null
select token as t2, lease_expires_at as l2 from queue.claim('w2', lease => interval '5 minutes')
\gset
select isnt(:'t2'::uuid, :'t1'::uuid, 'a second claim of the same job: a new token');
select is(:'l2'::timestamptz - (select claimed_at from queue.jobs where id = :j),
    interval '5 minutes', 'the lease argument wins');

select andal_test.expire(:j) \g /dev/null
select token as t3 from queue.claim('w3') \gset
select ok(:'t3'::uuid not in (:'t1'::uuid, :'t2'::uuid), 'a take-back claim: a new token');

select queue.configure_queue('slow', lease => interval '10 minutes') \g /dev/null
select queue.enqueue('{}', queue => 'slow') \g /dev/null
select queue.enqueue('{}', queue => 'slow') \g /dev/null
create temporary table slow as select * from queue.claim('w', queues => '{slow}', batch => 2);
select is(
    (select array_agg(distinct s.lease_expires_at - j.claimed_at)
     from slow as s join queue.jobs as j on j.id = s.job_id),
    array[interval '10 minutes'], 'the queue''s configured lease applies');
select is((select count(distinct token) from queue.jobs where queue = 'slow'), 2::bigint,
    'jobs claimed in one batch get distinct tokens');
select is((select count(*) from queue.jobs where queue = 'slow' and worker = 'w'), 2::bigint,
    'both record the worker');

select * from finish();
rollback;
