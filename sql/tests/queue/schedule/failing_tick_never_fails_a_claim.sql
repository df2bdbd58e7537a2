-- A schedule whose firing fails (its queue's payload limit shrank below its payload) never
-- fails the claim that fires it: the error is recorded in last_error, the schedule moves on
-- to its next tick, and the claim still returns the queue's other jobs.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.schedule(name => 'big', queue => 'q', every => '1 minute',
    payload => jsonb_build_object('blob', repeat('x', 200))) \g /dev/null
select queue.configure_queue('q', payload_limit => 100) \g /dev/null
update queue.schedules set anchor = now() - interval '90 seconds',
    next_at = now() - interval '30 seconds' where name = 'big';
select queue.enqueue('{}', queue => 'q') \g /dev/null

select lives_ok($$create temporary table got as select * from queue.claim('w', queues => '{q}')$$,
    'the claim does not fail');
select is((select count(*) from got), 1::bigint, 'it claims the queue''s other job');
select ok((select last_error like '%over the queue''s limit%' from queue.schedules()
           where name = 'big'), 'the error is recorded in last_error');
select is((select next_at from queue.schedules() where name = 'big'),
    now() + interval '30 seconds', 'the schedule moved on to its next tick');
select is((select count(*) from queue.schedule_ticks), 0::bigint, 'no tick was recorded');

select * from finish();
rollback;
