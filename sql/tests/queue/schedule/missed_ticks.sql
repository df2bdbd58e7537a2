-- Missed ticks: 'latest' (the default) fires only the latest missed tick once; 'all' fires
-- every missed tick, at most the latest catch_up of them; for cron as for every.
begin;
\ir ../_fixtures.psql
select plan(7);

create function pg_temp.miss(name text) returns void language sql as $$
    update queue.schedules set anchor = now() - interval '10 minutes 30 seconds',
        next_at = now() - interval '9 minutes 30 seconds'
    where schedules.name = miss.name
$$;
create function pg_temp.ticks(name text) returns timestamptz[] language sql as $$
    select array_agg((j.payload ->> '_tick')::timestamptz order by j.id) from queue.jobs as j
    where j.payload ->> '_schedule' = ticks.name
$$;

select queue.schedule(name => 'latest', queue => 'q', every => '1 minute') \g /dev/null
select pg_temp.miss('latest');
select queue.maintain() \g /dev/null
select is(pg_temp.ticks('latest'), array[now() - interval '30 seconds'],
    'latest: one job, for the latest of 10 missed ticks');

select queue.schedule(name => 'all3', queue => 'q', every => '1 minute', missed => 'all',
    catch_up => 3) \g /dev/null
select pg_temp.miss('all3');
select queue.maintain() \g /dev/null
select is(pg_temp.ticks('all3'), array[now() - interval '150 seconds',
    now() - interval '90 seconds', now() - interval '30 seconds'],
    'all with catch_up 3: the latest 3 missed ticks, oldest first');

select queue.schedule(name => 'all', queue => 'q', every => '1 minute', missed => 'all')
\g /dev/null
select pg_temp.miss('all');
select queue.maintain() \g /dev/null
select is(cardinality(pg_temp.ticks('all')), 10, 'all: every one of the 10 missed ticks');
select is((select next_at from queue.schedules where name = 'all'),
    now() + interval '30 seconds', 'the next tick is the first after now');

select queue.schedule(name => 'cron_all', queue => 'q', cron => '* * * * *', missed => 'all')
\g /dev/null
update queue.schedules set next_at = date_trunc('minute', now()) - interval '5 minutes'
where name = 'cron_all';
select queue.maintain() \g /dev/null
select is(pg_temp.ticks('cron_all'), array(
    select date_trunc('minute', now()) - g * interval '1 minute'
    from generate_series(5, 0, -1) as g), 'cron, all: each missed minute once');

select queue.schedule(name => 'cron_latest', queue => 'q', cron => '*/2 * * * *') \g /dev/null
update queue.schedules set next_at = now() - interval '1 hour' where name = 'cron_latest';
select queue.maintain() \g /dev/null
select is(cardinality(pg_temp.ticks('cron_latest')), 1, 'cron, latest: one job');
select ok((select t[1] > now() - interval '2 minutes' and t[1] <= now()
           from pg_temp.ticks('cron_latest') as t),
    '... for the latest missed tick');

select * from finish();
rollback;
