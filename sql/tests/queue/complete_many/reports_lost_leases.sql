-- complete_many completes the jobs whose token is current and reports completed = false for
-- the others, leaving those untouched; rows come back in input order.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.configure_queue('default', keep_results => true) \g /dev/null
select queue.enqueue_many(array_fill('{}'::jsonb, array[3]), category => 'c') \g /dev/null
select queue.set_category_limit('c', 3) \g /dev/null
create temp table c as select * from queue.claim('w', batch => 3);
select job_id as j2 from c order by job_id offset 1 limit 1 \gset

create temp table r as
select * from queue.complete_many(
    (select array_agg(job_id order by job_id desc) from c),
    (select array_agg(case when job_id = :j2 then gen_random_uuid() else token end
                      order by job_id desc) from c),
    (select array_agg(jsonb_build_object('id', job_id) order by job_id desc) from c)
);
select results_eq($$ select job_id, completed from r $$,
    $$ select job_id, job_id <> $$ || :j2 || $$ from c order by job_id desc $$,
    'one row per input, in input order; the wrong token is not completed');
select results_eq($$ select id from queue.jobs $$, array[:j2::bigint],
    'only the job with the wrong token is still live');
select is((select status from queue.jobs where id = :j2), 'running', 'and still running');
select is((select count(*) from queue.worker_locks), 1::bigint, 'completed jobs freed slots');
select is((select count(*) from queue.results r join c on c.job_id = r.job_id
           where r.result = jsonb_build_object('id', c.job_id)), 2::bigint,
    'each kept result is its own job''s');

select * from finish();
rollback;
