-- A paused queue's jobs are not claimed, whether the claim names the queue alone, in a list,
-- or claims every queue; other queues are served; a job already running finishes; enqueue
-- still works; queue.stats() shows the pause; resume makes the jobs claimable again.
begin;
\ir ../_fixtures.psql
select plan(13);

select queue.enqueue('{}', queue => 'p') as running \gset
select token as t from queue.claim('w', queues => '{p}') \gset
select queue.enqueue('{}', queue => 'p') from generate_series(1, 3) \g /dev/null
select queue.enqueue('{}', queue => 'other') as other \gset

select lives_ok($$ select queue.pause(queue => 'p') $$, 'pause');
select lives_ok($$ select queue.pause(queue => 'p') $$, 'pausing twice is harmless');
select is_empty($$ select * from queue.claim('w', queues => '{p}', batch => 10) $$,
    'a claim of the paused queue takes nothing');
select is((select array_agg(job_id) from queue.claim('w', queues => '{p,other}', batch => 10)),
    array[:other::bigint], 'a claim of a list takes only the other queue''s jobs');
select queue.enqueue('{}', queue => 'other') as other2 \gset
select is((select array_agg(job_id) from queue.claim('w', batch => 10)),
    array[:other2::bigint], 'a claim of every queue leaves the paused queue out');
select lives_ok($$ select queue.enqueue('{}', queue => 'p') $$, 'enqueue still works');
select is((select count(*) from queue.jobs where queue = 'p' and status = 'pending'), 4::bigint,
    'its jobs stay pending');
select lives_ok(format($$ select queue.complete(%s, %L) $$, :running, :'t'),
    'a job running when the queue was paused completes');
select is((select paused from queue.stats() where queue = 'p' and category is null), true,
    'queue.stats() shows the queue paused');
select is((select paused from queue.stats() where queue = 'other' and category is null), false,
    'and the others not');

select queue.resume(queue => 'p') \g /dev/null
select is((select count(*) from queue.claim('w', queues => '{p}', batch => 10)), 4::bigint,
    'after resume its jobs are claimed');
select throws_ok($$ select queue.pause(queue => null) $$, '22004', null, 'null queue: 22004');
select throws_ok($$ select queue.resume(queue => '') $$, '22023', null, 'empty name: 22023');

select * from finish();
rollback;
