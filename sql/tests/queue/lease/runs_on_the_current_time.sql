-- Leases run on the database's current time (clock_timestamp()), not the transaction's
-- start (now()): a claim late in a long transaction gets a lease that has not expired, and a
-- complete, fail, heartbeat or release after the expiry is refused (AN001) even in a
-- transaction begun before it. (The sleeps make the clock move; nothing waits on them.)
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'clock') as j \gset
select pg_sleep(1.2);
create temp table c as select * from queue.claim('w', queues => '{clock}', lease => '1 second');
select ok((select lease_expires_at from c) > clock_timestamp(),
    'a claim 1.2 s into a transaction with a 1 s lease: the lease has not expired');
select ok((select lease_expires_at from c) > now() + interval '1.2 seconds',
    'the lease starts at the claim, not at the transaction''s start');
select token as t from c \gset

select pg_sleep(1.1);  -- the lease expires, inside the transaction that claimed the job
select throws_ok(format('select queue.complete(%s, %L)', :j, :'t'), 'AN001', null,
    'a complete after the expiry is refused');
select throws_ok(format('select queue.heartbeat(%s, %L)', :j, :'t'), 'AN001', null,
    'a heartbeat after the expiry is refused');
select throws_ok(format('select queue.fail(%s, %L, %L)', :j, :'t', 'late'), 'AN001', null,
    'a fail after the expiry is refused');
select is((select completed from queue.complete_many(array[:j]::bigint[],
    array[:'t']::uuid[])), false, 'complete_many: completed false');

select * from finish();
rollback;
