-- A queue with keep_results stores each completed job's result in queue.results.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.configure_queue('kept', keep_results => true) \g /dev/null
select queue.enqueue('{}', queue => 'kept') as j \gset
select token as t from queue.claim('w', queues => '{kept}') \gset
select queue.complete(:j, :'t', result => '{"answer": 42}') \g /dev/null

select is((select result from queue.results where job_id = :j), '{"answer": 42}'::jsonb,
    'the result is kept');
select is((select queue from queue.results where job_id = :j), 'kept', 'with its queue');
select is((select count(*) from queue.jobs), 0::bigint, 'and the job left the live table');

select * from finish();
rollback;
