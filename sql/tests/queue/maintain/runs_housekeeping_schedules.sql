-- andal's housekeeping runs as its own schedules, listed by queue.schedules() as builtin:
-- queue.maintain() runs each when due (retention deletes results and dead letters past
-- their queue's retention, 7 and 30 days by default); their timing can be changed and they
-- can be switched off, but not removed or pointed at a queue.
begin;
\ir ../_fixtures.psql
select plan(11);

select is(array(select name from queue.schedules() where builtin order by name),
    array['andal.cache_prune', 'andal.cache_refresh_due', 'andal.retention',
        'andal.stats_rollup'], 'the housekeeping schedules are installed and listed');

select queue.configure_queue('short', timeout => null, results_retention => '1 hour',
    dead_retention => '2 hours') \g /dev/null
insert into queue.results (job_id, queue, completed_at) values
    (1, 'q', now() - interval '8 days'), (2, 'q', now() - interval '6 days'),
    (3, 'short', now() - interval '2 hours');
insert into queue.dead_letters (job_id, queue, priority, payload, attempt, max_attempts,
    enqueued_at, died_at, reason) values
    (11, 'q', 0, '{}', 1, 1, now(), now() - interval '31 days', 'exhausted'),
    (12, 'q', 0, '{}', 1, 1, now(), now() - interval '29 days', 'exhausted'),
    (13, 'short', 0, '{}', 1, 1, now(), now() - interval '3 hours', 'exhausted');

update queue.schedules set next_at = now() + interval '1 hour' where name = 'andal.retention';
select queue.maintain() \g /dev/null
select is((select count(*) from queue.results), 3::bigint, 'nothing goes before the tick');

update queue.schedules set next_at = now() - interval '1 second' where name = 'andal.retention';
select queue.maintain() \g /dev/null
select is(array(select job_id from queue.results order by 1), array[2::bigint],
    'results past their queue''s retention are deleted (7 days by default)');
select is(array(select job_id from queue.dead_letters order by 1), array[12::bigint],
    'dead letters past their queue''s retention are deleted (30 days by default)');
select ok((select next_at > now() and last_fired_at = now() and last_error is null
           from queue.schedules where name = 'andal.retention'),
    'the schedule moved to its next tick');

select is(queue.schedule(name => 'andal.retention', every => '5 minutes'),
    date_trunc('second', now()) + interval '5 minutes', 'its period can be changed');
select is(queue.schedule(name => 'andal.cache_prune', cron => '0 3 * * *', enabled => false),
    null::timestamptz, 'a housekeeping schedule can be switched off');
select is((select next_at from queue.schedules() where name = 'andal.cache_prune'),
    null::timestamptz, '... then it has no next fire time');
select throws_ok($$select queue.schedule(name => 'andal.retention', queue => 'x',
    every => '1 hour')$$, '22023', null, 'it cannot be given a queue');
select throws_ok($$select queue.unschedule('andal.retention')$$, '55000', null,
    'nor removed');
select throws_ok($$select queue.schedule(name => 'andal.mine', queue => 'x',
    every => '1 hour')$$, '22023', null, 'names starting with andal. are reserved');

select * from finish();
rollback;
