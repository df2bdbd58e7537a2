-- queue.jobs_by lists finished jobs from the history, the dead letters and kept results,
-- each job once and in the state queue.job gives it: a job that died and was requeued is
-- listed as live, not dead; a completed job kept both in history and results appears once.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.set_history(queue => 'h', retention => '1 day') \g /dev/null
select queue.configure_queue('h', keep_results => true) \g /dev/null

select queue.enqueue('{}', queue => 'h') as done \gset
select token as t from queue.claim('w', queues => '{h}') \gset
select queue.complete(:done, :'t', result => '{"r": 1}') \g /dev/null

select queue.enqueue('{}', queue => 'h', max_attempts => 1) as back \gset
select token as t from queue.claim('w', queues => '{h}') \gset
select queue.fail(:back, :'t', 'boom') \g /dev/null
select queue.requeue_dead(:back) \g /dev/null

select is((select array_agg(job_id) from queue.jobs_by(queue => 'h', state => 'completed')),
    array[:done::bigint], 'the completed job, once');
select is((select result from queue.jobs_by(queue => 'h', state => 'completed')),
    '{"r": 1}'::jsonb, 'with its result');
select is_empty($$ select * from queue.jobs_by(queue => 'h', state => 'dead') $$,
    'a requeued job is not listed as dead');
select is((select state from queue.jobs_by(queue => 'h') where job_id = :back), 'pending',
    'it is listed as it is now');
select is((select count(*) from queue.jobs_by(queue => 'h')), 2::bigint, 'each job once');

select * from finish();
rollback;
