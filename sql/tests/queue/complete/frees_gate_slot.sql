-- Completing a gated job frees its category slot at once: the next job of the category can
-- be claimed in the same transaction.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}', category => 'c') as j1 \gset
select queue.enqueue('{}', category => 'c') as j2 \gset
select token as t from queue.claim('w') \gset
select is_empty($$ select * from queue.claim('w') $$, 'the slot is taken');
select queue.complete(:j1, :'t') \g /dev/null
select is((select count(*) from queue.worker_locks where job_id = :j1), 0::bigint,
    'the slot row is gone');
select results_eq($$ select job_id from queue.claim('w') $$, array[:j2::bigint],
    'the next job of the category runs');

select * from finish();
rollback;
