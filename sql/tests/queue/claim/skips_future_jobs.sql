-- claim takes only jobs with available_at <= now(): a delayed job waits for its time.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}', delay => interval '1 hour', priority => 9) as later \gset
select queue.enqueue('{}') as ready \gset

select results_eq($$ select job_id from queue.claim('w', batch => 10) $$,
    array[:ready::bigint], 'only the ready job is claimed, though the delayed one ranks higher');
select is((select row(status, attempt)::text from queue.jobs where id = :later),
    '(pending,0)', 'the delayed job is untouched');
select is_empty($$ select * from queue.claim('w', batch => 10) $$, 'nothing else is ready');

update queue.jobs set available_at = now() where id = :later;
select results_eq($$ select job_id from queue.claim('w') $$, array[:later::bigint],
    'a job whose available_at is exactly now() is ready');
select is((select status from queue.jobs where id = :later), 'running', 'and is now running');

select * from finish();
rollback;
