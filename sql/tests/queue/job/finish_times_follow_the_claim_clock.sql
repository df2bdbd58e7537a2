-- A finished job's times are on the clock its claim used (the time of the write), so a job
-- claimed, run and finished in one transaction never reads as finished before it started:
-- history's finished_at, the dead letter's died_at and a kept result's completed_at. A job
-- that finishes twice in one transaction (dead, requeued, claimed, completed) is answered by
-- its newest history row: queue.job says completed, and jobs_by lists it once.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.set_history(queue => 'h', retention => '7 days') \g /dev/null
select queue.configure_queue('h', keep_results => true) \g /dev/null

-- one transaction (this test's): now() stays at its start, the clock moves on
select pg_sleep(0.01);
select queue.enqueue('{}', queue => 'h') as j \gset
select token as t from queue.claim('w', queues => '{h}') \gset
select queue.complete(:j, :'t', result => '{"ok": 1}') \g /dev/null
select ok((select finished_at >= started_at from queue.job(:j)),
    'history: finished at or after it started');
select ok((select completed_at > now() from queue.results where job_id = :j),
    'results: completed on the clock, not at the transaction''s start');

select queue.enqueue('{}', queue => 'h', max_attempts => 1) as d \gset
select token as t from queue.claim('w', queues => '{h}') \gset
select claimed_at as claimed from queue.jobs where id = :d \gset
select queue.fail(:d, :'t', 'fatal') \g /dev/null
select ok((select died_at >= :'claimed'::timestamptz from queue.dead_letters where job_id = :d),
    'dead letter: died at or after its claim');
select ok((select finished_at >= :'claimed'::timestamptz from queue.history where job_id = :d),
    'its history row too');

-- the same job finishes again in this transaction: requeued, claimed, completed
select queue.requeue_dead(:d) \g /dev/null
select token as t from queue.claim('w', queues => '{h}') \gset
select queue.complete(:d, :'t') \g /dev/null
select is((select count(*) from queue.history where job_id = :d), 2::bigint,
    'two history rows of one job');
select is((select state from queue.job(:d)), 'completed', 'queue.job answers the newest');
select is((select count(*) from queue.jobs_by(queue => 'h') where job_id = :d), 1::bigint,
    'jobs_by lists it once');
select is((select state from queue.jobs_by(queue => 'h') where job_id = :d), 'completed',
    'as completed');
select is((select count(*) from queue.jobs_by(queue => 'h', state => 'dead') where job_id = :d),
    0::bigint, 'and not among the dead');

select * from finish();
rollback;
