-- An attempt that runs to its timeout fails with reason timeout: its token is fenced (a late
-- complete, fail or heartbeat gets AN001), the error history records reason timeout, the
-- job is retried after the queue's backoff, and dead-lettered when out of attempts.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.enqueue('{"n": 1}', queue => 'q', timeout => '2 seconds', max_attempts => 2)
\g /dev/null
create temporary table c1 as select * from queue.claim('w1', queues => '{q}', lease => '1 hour');
select is((select lease_expires_at - (select claimed_at from queue.jobs) from c1),
    interval '2 seconds',
    'the lease ends at the deadline, not after the claim''s lease');

-- the test's clock does not move: the attempt started 3 s ago, its deadline passed
update queue.jobs set claimed_at = now() - interval '3 seconds',
    lease_expires_at = now() - interval '1 second';
select throws_ok(format('select queue.complete(%s, %L)', job_id, token), 'AN001', null,
    'a complete after the timeout gets the lease-lost SQLSTATE') from c1;
select throws_ok(format('select queue.heartbeat(%s, %L)', job_id, token), 'AN001', null,
    'so does a heartbeat') from c1;
select throws_ok(format('select queue.fail(%s, %L, %L)', job_id, token, 'late'), 'AN001', null,
    'and a fail') from c1;

select queue.maintain() \g /dev/null
select is((select status from queue.jobs), 'pending', 'the job is pending again');
select is((select errors -> -1 ->> 'reason' from queue.jobs), 'timeout',
    'the error history records reason timeout');
select ok((select errors -> -1 ->> 'error' like 'timeout%' from queue.jobs),
    '... and says so in the error text');
select is((select available_at from queue.jobs), now() + interval '5 seconds',
    'the retry waits for the queue''s backoff');

update queue.jobs set available_at = now() - interval '1 second';
create temporary table c2 as select * from queue.claim('w2', queues => '{q}');
update queue.jobs set claimed_at = now() - interval '3 seconds',
    lease_expires_at = now() - interval '1 second';
select queue.maintain() \g /dev/null
select is((select reason from queue.dead_letters), 'exhausted',
    'out of attempts after a timeout: dead-lettered');
select ok((select last_error like 'timeout%' and errors -> -1 ->> 'reason' = 'timeout'
           from queue.dead_letters), '... with the timeout as its last error');

select * from finish();
rollback;
