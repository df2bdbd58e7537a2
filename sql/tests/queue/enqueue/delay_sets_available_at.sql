-- delay schedules the job on the database clock: available_at = now() + delay.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}', delay => interval '90 seconds') as j1 \gset
select queue.enqueue('{}', delay => interval '0') as j2 \gset

select is((select available_at from queue.jobs where id = :j1), now() + interval '90 seconds',
    'available_at is now() + delay');
select is((select available_at from queue.jobs where id = :j2), now(), 'zero delay: ready now');
select is((select enqueued_at from queue.jobs where id = :j1), now(),
    'enqueued_at is the enqueue time, not the scheduled time');

select * from finish();
rollback;
