-- Updating a schedule neither drops a tick that fell due but was not fired yet (no claim or
-- maintain since) nor re-fires one: with 'latest' the latest due tick fires, with 'all'
-- every due tick fires, once, by the schedule's definition before the update; a second
-- update and the next maintain fire nothing more.
begin;
\ir ../_fixtures.psql
select plan(7);

create function pg_temp.miss(name text) returns void language sql as $$
    update queue.schedules set anchor = now() - interval '5 minutes 30 seconds',
        next_at = now() - interval '4 minutes 30 seconds'
    where schedules.name = miss.name
$$;
create function pg_temp.ticks(name text) returns timestamptz[] language sql as $$
    select array_agg((j.payload ->> '_tick')::timestamptz order by j.id) from queue.jobs as j
    where j.payload ->> '_schedule' = ticks.name
$$;

select queue.schedule(name => 'all', queue => 'q', every => '1 minute', missed => 'all')
\g /dev/null
select pg_temp.miss('all');
select queue.schedule(name => 'all', queue => 'q', every => '1 minute', missed => 'all',
    payload => jsonb_build_object('v', 2)) \g /dev/null
select is(pg_temp.ticks('all'), array(
    select now() - g * interval '1 minute' - interval '30 seconds'
    from generate_series(4, 0, -1) as g),
    'all: an update of the payload fires each of the 5 due ticks');
select is((select count(*)::int from queue.jobs where payload ->> 'v' is null), 5,
    '... by the definition before the update');
select queue.schedule(name => 'all', queue => 'q', every => '1 minute', missed => 'all',
    payload => jsonb_build_object('v', 3)) \g /dev/null
select queue.maintain() \g /dev/null
select is(cardinality(pg_temp.ticks('all')), 5, 'a second update and maintain fire none again');
select is((select next_at from queue.schedules where name = 'all'),
    now() + interval '30 seconds', 'the next tick is the first after now');

select queue.schedule(name => 'latest', queue => 'q', every => '1 minute') \g /dev/null
select pg_temp.miss('latest');
select queue.schedule(name => 'latest', queue => 'q', cron => '*/5 * * * *') \g /dev/null
select is(pg_temp.ticks('latest'), array[now() - interval '30 seconds'],
    'latest: an update of the timing fires the latest due tick');
select queue.schedule(name => 'latest', queue => 'q', cron => '*/5 * * * *') \g /dev/null
select is(cardinality(pg_temp.ticks('latest')), 1, '... and never again');

select queue.schedule(name => 'off', queue => 'q', every => '1 minute') \g /dev/null
select pg_temp.miss('off');
select queue.schedule(name => 'off', queue => 'q', every => '1 minute', enabled => false)
\g /dev/null
select is(cardinality(pg_temp.ticks('off')), 1,
    'disabling fires the tick that was due before it');

select * from finish();
rollback;
