-- queue.history is partitioned by expiry: set_history creates the partitions the retention
-- needs ahead; queue.maintain() drops a partition whose range has passed, whole, and keeps
-- the ones still in use; rows no partition covered (in the default partition) move to their
-- partition when it is made, or are deleted once expired. Bad input is refused.
begin;
\ir ../_fixtures.psql
select plan(9);

create function andal_test.parts() returns bigint language sql as $$
    select count(*) from pg_inherits where inhparent = 'queue.history'::regclass
      and inhrelid <> 'queue.history_default'::regclass
$$;

-- Two rows waiting in the default partition (no partition exists yet): one still to keep,
-- one expired.
insert into queue.history (job_id, queue, priority, state, payload, attempt, max_attempts,
    enqueued_at, keep_until)
values (2, 'h', 0, 'completed', '{}', 1, 5, now(), now() + interval '30 minutes'),
       (3, 'h', 0, 'completed', '{}', 1, 5, now(), now() - interval '1 minute');

select queue.configure_history(partition_width => '1 hour') \g /dev/null
select queue.set_history(queue => 'h', retention => '3 hours') \g /dev/null
select is(andal_test.parts(), 6::bigint,
    'set_history made the partitions ahead: 3 hours and two widths, hour by hour');
select is((select count(*) from queue.history_default), 0::bigint,
    'the default partition is empty: one row moved, the expired one deleted');
select is((select count(*) from queue.history where job_id = 2), 1::bigint,
    'the waiting row is in its partition');
select is((select count(*) from queue.history where job_id = 3), 0::bigint,
    'the expired row is gone');

-- Rows that expired an hour ago, in a partition of the past (made by hand: time does not
-- move inside a test).
create table queue.history_past partition of queue.history
for values from (now() - interval '2 hours') to (now() - interval '1 hour');
insert into queue.history (job_id, queue, priority, state, payload, attempt, max_attempts,
    enqueued_at, keep_until)
values (1, 'h', 0, 'completed', '{}', 1, 5, now(), now() - interval '90 minutes');

select queue.maintain() \g /dev/null
select is(to_regclass('queue.history_past'), null, 'maintain dropped the passed partition');
select is((select count(*) from queue.history where job_id = 1), 0::bigint, 'with its rows');
select is(andal_test.parts(), 6::bigint, 'the partitions in use stay');

select throws_ok($$ select queue.set_history(queue => 'h', retention => '0') $$, '22023', null,
    'retention must be positive');
select throws_ok($$ select queue.configure_history(partition_width => '10 ms') $$, '22023',
    null, 'partitions are at least a second wide');

select * from finish();
rollback;
