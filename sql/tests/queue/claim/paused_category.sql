-- A category with limit 0 is paused: none of its jobs is claimed, other jobs are; raising the
-- limit resumes it.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.set_category_limit('c', 0) \g /dev/null
select queue.enqueue('{}', category => 'c', priority => 9) as paused \gset
select queue.enqueue('{}') as plain \gset
select queue.enqueue('{}', category => 'other') as other \gset

select results_eq($$ select job_id from queue.claim('w', batch => 10) $$,
    array[:plain::bigint, :other::bigint], 'the paused category''s job is skipped, others run');
select is((select status from queue.jobs where id = :paused), 'pending', 'it stays pending');

select queue.set_category_limit('c', 1) \g /dev/null
select results_eq($$ select job_id from queue.claim('w', batch => 10) $$,
    array[:paused::bigint], 'after raising the limit it runs');
select is(andal_test.running('c'), 1::bigint, 'one running');

select * from finish();
rollback;
