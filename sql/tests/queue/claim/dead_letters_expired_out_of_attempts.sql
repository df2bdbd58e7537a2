-- An expired job with no attempt left goes to the dead letters instead of being claimed again
-- (reason exhausted, its history kept), and it leaves the live table.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{"x": 1}', max_attempts => 1) as j \gset
select queue.claim('w1') \g /dev/null
select andal_test.expire(:j) \g /dev/null

select is_empty($$ select * from queue.claim('w2') $$, 'the exhausted job is not claimed');
select is((select count(*) from queue.jobs where id = :j), 0::bigint,
    'it left the live table');
select is(
    (select row(reason, attempt, max_attempts, payload)::text
     from queue.dead_letters where job_id = :j),
    row('exhausted', 1, 1, '{"x": 1}'::jsonb)::text, 'it is a dead letter, reason exhausted');
select is((select last_error from queue.dead_letters where job_id = :j),
    'lease expired (worker w1)', 'last_error says why');
select is((select jsonb_array_length(errors) from queue.dead_letters where job_id = :j), 1,
    'the error history holds the lapse');
select is((select errors -> 0 ->> 'worker' from queue.dead_letters where job_id = :j), 'w1',
    'with the worker that lost it');

select * from finish();
rollback;
