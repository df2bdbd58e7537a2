-- A schedule's payload is a job's payload to be: queue.schedules() shows it to the roles that
-- may claim (worker) or schedule (admin); a monitor (a dashboard) reads every other column and
-- a null payload, as it reads no job's payload.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.schedule(name => 'secret', queue => 'sp', every => '1 hour',
    payload => '{"token": "s3cret"}') \g /dev/null
set local role andal_monitor;
select is((select (payload is null, every) from queue.schedules() where name = 'secret'),
    (true, interval '1 hour'), 'a monitor sees the schedule, not its payload');
reset role;
set local role andal_worker;
select is((select payload from queue.schedules() where name = 'secret'),
    '{"token": "s3cret"}'::jsonb, 'a worker sees the payload');
reset role;
set local role andal_admin;
select is((select payload from queue.schedules() where name = 'secret'),
    '{"token": "s3cret"}'::jsonb, 'an admin too');
reset role;

select * from finish();
rollback;
