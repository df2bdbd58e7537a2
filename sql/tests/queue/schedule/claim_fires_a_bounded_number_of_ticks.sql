-- A claim fires at most 10 due ticks (of all its schedules together): a schedule catching up
-- (missed => 'all') after an outage is fired over the next claims and queue.maintain(),
-- oldest tick first, each tick once and none lost; a cron schedule catching up with 'all'
-- is left to queue.maintain() whole. The usual single due tick still fires in the claim.
begin;
\ir ../_fixtures.psql
select plan(8);

create function pg_temp.fired(name text) returns timestamptz[] language sql as $$
    select coalesce(array_agg(t.tick order by t.tick), '{}') from queue.schedule_ticks as t
    where t.schedule = fired.name
$$;

select queue.schedule(name => 'dense', queue => 'cq', every => '1 second', missed => 'all',
    catch_up => 1000) \g /dev/null
update queue.schedules set anchor = now() - interval '60 seconds',
    next_at = now() - interval '59 seconds'
where name = 'dense';  -- 60 due ticks: now - 59 s ... now
select count(*) from queue.claim(worker => 'w', queues => array['cq']) \g /dev/null
select is(cardinality(pg_temp.fired('dense')), 10, 'a claim fires 10 of the 60 due ticks');
select is(pg_temp.fired('dense'), array(
    select now() - g * interval '1 second' from generate_series(59, 50, -1) as g),
    '... the oldest 10');
select ok((select next_at = now() - interval '49 seconds' from queue.schedules
           where name = 'dense'), 'the next one is still due');
select count(*) from queue.claim(worker => 'w') \g /dev/null
select is(cardinality(pg_temp.fired('dense')), 20, 'a claim of every queue fires 10 more');
select queue.maintain() \g /dev/null
select is(pg_temp.fired('dense'), array(
    select now() - g * interval '1 second' from generate_series(59, 0, -1) as g),
    'maintain fires the rest: each of the 60 ticks once, none lost');

select queue.schedule(name => 'cron_all', queue => 'cq2', cron => '* * * * *',
    missed => 'all') \g /dev/null
update queue.schedules set next_at = date_trunc('minute', now()) - interval '30 minutes'
where name = 'cron_all';
select count(*) from queue.claim(worker => 'w', queues => array['cq2']) \g /dev/null
select is(cardinality(pg_temp.fired('cron_all')), 0,
    'a claim leaves a cron catch-up to maintain');
select queue.maintain() \g /dev/null
select is(cardinality(pg_temp.fired('cron_all')), 31, 'maintain fires each of its 31 ticks');

select queue.schedule(name => 'one', queue => 'cq3', every => '1 minute') \g /dev/null
update queue.schedules set next_at = now() - interval '1 second' where name = 'one';
select count(*) from queue.claim(worker => 'w', queues => array['cq3']) \g /dev/null
select is(cardinality(pg_temp.fired('one')), 1, 'a single due tick fires in the claim');

select * from finish();
rollback;
