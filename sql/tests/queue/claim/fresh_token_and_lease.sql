-- Every claim issues a new fencing token; the lease is now() + the lease argument, else the
-- queue's configured lease, else 60 seconds; the worker name is recorded.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{}') as j \gset
select token as t1, lease_expires_at as l1 from queue.claim('w1') \gset
select isnt(:'t1'::uuid, null, 'claim returns a token');
select is(:'l1'::timestamptz, now() + interval '60 seconds', 'default lease: 60 seconds');
select is((select row(token, worker, claimed_at)::text from queue.jobs where id = :j),
    row(:'t1'::uuid, 'w1', now())::text, 'the job records token, worker and claim time');

select queue.release(:j, :'t1') \g /dev/null
select token as t2, lease_expires_at as l2 from queue.claim('w2', lease => interval '5 minutes')
\gset
select isnt(:'t2'::uuid, :'t1'::uuid, 'a second claim of the same job: a new token');
select is(:'l2'::timestamptz, now() + interval '5 minutes', 'the lease argument wins');

select andal_test.expire(:j) \g /dev/null
select token as t3 from queue.claim('w3') \gset
select ok(:'t3'::uuid not in (:'t1'::uuid, :'t2'::uuid), 'a take-back claim: a new token');

select queue.configure_queue('slow', lease => interval '10 minutes') \g /dev/null
select queue.enqueue('{}', queue => 'slow') \g /dev/null
select queue.enqueue('{}', queue => 'slow') \g /dev/null
select is(
    (select array_agg(distinct lease_expires_at)
     from queue.claim('w', queues => '{slow}', batch => 2)),
    array[now() + interval '10 minutes'], 'the queue''s configured lease applies');
select is((select count(distinct token) from queue.jobs where queue = 'slow'), 2::bigint,
    'jobs claimed in one batch get distinct tokens');
select is((select count(*) from queue.jobs where queue = 'slow' and worker = 'w'), 2::bigint,
    'both record the worker');

select * from finish();
rollback;
