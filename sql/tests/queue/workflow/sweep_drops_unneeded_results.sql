-- The sweep (queue.maintain, once a minute) drops the kept ends no edge refers to (those a
-- race between two ending children leaves), and keeps those a live child still needs.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.enqueue('{}', queue => 'wp') as p \gset
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as c \gset
select job_id as pj, token as pt from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:pj, :'pt', '{"kept": true}');
insert into queue.workflow_results (job_id, state, result) values (-1, 'completed', '{}');
select is(queue._workflow_sweep() >= 1, true, 'a kept end without edges goes');
select is((select result from queue.workflow_results where job_id = :p), '{"kept": true}'::jsonb,
    'the one a live child needs stays');

select * from finish();
rollback;
