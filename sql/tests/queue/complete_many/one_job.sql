-- complete_many and complete_many_then_claim given one job take complete's direct path with
-- complete_many's outcome: the job completes (its slot freed, its result kept); a stale
-- token or a requested abort gives completed = false and changes nothing; a result over the
-- limit is refused as results[1] (54000) and changes nothing either.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.configure_queue('one', keep_results => true) \g /dev/null
select queue.set_category_limit('c1', 1) \g /dev/null
select queue.enqueue_many(array_fill('{}'::jsonb, array[4]), queue => 'one', category => 'c1')
\g /dev/null
create temp table c as select * from queue.claim('w', queues => '{one}', batch => 1);

select results_eq(
    $$ select job_id, completed from queue.complete_many(
           (select array[job_id] from c), (select array[token] from c), array['{"r": 1}'::jsonb]) $$,
    $$ select job_id, true from c $$,
    'one job with its token: completed');
select is((select result from queue.results where job_id = (select job_id from c)),
    '{"r": 1}'::jsonb, 'its result is kept');
select is((select count(*) from queue.worker_locks), 0::bigint, 'its slot is freed');

delete from c;
insert into c select * from queue.claim('w', queues => '{one}', batch => 1);
select andal_test.state() as before \gset
select results_eq(
    $$ select job_id, completed from queue.complete_many(
           (select array[job_id] from c), array[gen_random_uuid()]) $$,
    $$ select job_id, false from c $$,
    'a stale token: completed = false, not an error');
select is(andal_test.state(), :'before', 'and nothing changed');

select queue.cancel((select job_id from c)) \g /dev/null
select andal_test.state() as before \gset
select results_eq(
    $$ select job_id, completed from queue.complete_many_then_claim(
           (select array[job_id] from c), (select array[token] from c), null,
           'w', '{one}', 1, null) where not claimed $$,
    $$ select job_id, false from c $$,
    'an abort requested: completed = false (complete_many_then_claim)');
select is((select status from queue.jobs where id = (select job_id from c)), 'running',
    'the aborted job is left for its worker to end');

select queue.configure_queue('two', keep_results => true) \g /dev/null
select queue.enqueue(payload => '{}', queue => 'two') \g /dev/null
delete from c;
insert into c select * from queue.claim('w', queues => '{two}', batch => 1);
update queue.config set max_result_bytes = 100;
select throws_ok(
    format($$ select * from queue.complete_many(array[%s::bigint], array[%L::uuid],
        array[jsonb_build_object('x', repeat('y', 200))]) $$,
        (select job_id from c), (select token from c)),
    '54000', null, 'a result over the limit is refused');
select throws_like(
    format($$ select * from queue.complete_many(array[%s::bigint], array[%L::uuid],
        array[jsonb_build_object('x', repeat('y', 200))]) $$,
        (select job_id from c), (select token from c)),
    'results[1]%', 'named as complete_many names it');

select * from finish();
rollback;
