-- A due tick is fired by a claim of its queue (not of another queue), enqueues one job that
-- carries the schedule's name and the tick, and is recorded under its (schedule, tick) key:
-- firing the same tick again is a no-op. queue.schedules() shows the last and next tick.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.schedule(name => 'report', queue => 'q', every => '1 minute',
    payload => '{"kind": "report"}', priority => 3) \g /dev/null
-- the test's clock (now()) does not move: put the schedule's phase 90 s in the past
update queue.schedules set anchor = now() - interval '90 seconds',
    next_at = now() - interval '30 seconds' where name = 'report';

select is((select count(*) from queue.claim('w', queues => '{other}')), 0::bigint,
    'a claim of another queue fires nothing');
select is((select count(*) from queue.jobs), 0::bigint, '... and enqueues nothing');

create temporary table got as select * from queue.claim('w', queues => '{q}');
select is((select count(*) from got), 1::bigint, 'a claim of the queue gets the tick''s job');
select is((select payload from got),
    jsonb_build_object('kind', 'report', '_schedule', 'report',
        '_tick', now() - interval '30 seconds'),
    'the job carries the payload, the schedule''s name and its tick');
select is((select priority from got), 3, 'with the schedule''s priority');
select is((select array_agg(job_id) from queue.schedule_ticks where schedule = 'report'),
    (select array_agg(job_id) from got), 'the tick is recorded with its job');

-- another session that saw the same tick due fires it again: the key makes it a no-op
update queue.schedules set next_at = now() - interval '30 seconds' where name = 'report';
select is(queue._fire_due(array['q']), 0, 'firing the same tick again fires nothing');
select is((select count(*) from queue.jobs), 1::bigint, '... and enqueues no second job');

select is((select last_tick from queue.schedules() where name = 'report'),
    now() - interval '30 seconds', 'queue.schedules() shows the last tick');
select is((select next_at from queue.schedules() where name = 'report'),
    now() + interval '30 seconds', '... and the next one');

select * from finish();
rollback;
