-- The failure of the last attempt moves the job to queue.dead_letters with reason exhausted
-- and its whole error history (every attempt's error, time and worker); it leaves the live
-- table and its gate slot.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.enqueue('{"p": 1}', max_attempts => 3, category => 'c', priority => 4) as j \gset
create temp table statuses (attempt int, status text);
do $$
declare
    v_tok uuid;
    v_id bigint;
begin
    for i in 1 .. 3 loop
        update queue.jobs set available_at = now();
        select c.job_id, c.token into v_id, v_tok from queue.claim('w' || i) as c;
        insert into statuses values (i, queue.fail(v_id, v_tok, 'error ' || i));
    end loop;
end
$$;

select results_eq($$ select status from statuses order by attempt $$,
    array['pending', 'pending', 'dead'], 'fail returns pending, pending, then dead');
select is((select count(*) from queue.jobs), 0::bigint, 'the job left the live table');
select is((select count(*) from queue.worker_locks), 0::bigint, 'and its gate slot');
select is(
    (select row(queue, category, priority, payload, attempt, max_attempts, reason,
                last_error, enqueued_at)::text
     from queue.dead_letters where job_id = :j),
    row('default', 'c', 4, '{"p": 1}'::jsonb, 3, 3, 'exhausted', 'error 3', now())::text,
    'the dead letter keeps the job, reason exhausted, last_error');
select is(
    (select jsonb_agg(jsonb_build_array(e ->> 'attempt', e ->> 'error', e ->> 'worker')
                      order by (e ->> 'attempt')::int)
     from queue.dead_letters, jsonb_array_elements(errors) as e where job_id = :j),
    '[["1", "error 1", "w1"], ["2", "error 2", "w2"], ["3", "error 3", "w3"]]'::jsonb,
    'the whole error history: every attempt''s error and worker');
select ok(
    (select bool_and((e ->> 'at')::timestamptz = now())
     from queue.dead_letters, jsonb_array_elements(errors) as e where job_id = :j),
    'and each error''s time');
select ok((select died_at >= now() and died_at <= clock_timestamp() from queue.dead_letters
    where job_id = :j), 'died_at set, on the clock of the write');

select * from finish();
rollback;
