-- A job's error history keeps its 25 newest entries: a job retried hundreds of times does not
-- grow a row every later write copies whole. Each entry names its attempt; the take-back of
-- an expired lease appends through the same rule.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}', queue => 'h25', max_attempts => 40) as job \gset
create function pg_temp.fail_once(job bigint) returns void language plpgsql as $$
declare v_token uuid;
begin
    update queue.jobs set available_at = now() where id = job;
    select c.token into v_token from queue.claim(worker => 'w', queues => '{h25}') as c;
    perform queue.fail(job, v_token, 'boom');
end $$;
select pg_temp.fail_once(:job) from generate_series(1, 30);

select is((select jsonb_array_length(errors) from queue.jobs where id = :job), 25,
    'after 30 failures, 25 entries are kept');
select is((select (errors -> 0 ->> 'attempt')::int from queue.jobs where id = :job), 6,
    'the oldest go first');
select is((select (errors -> -1 ->> 'attempt')::int from queue.jobs where id = :job), 30,
    'the newest is last');

update queue.jobs set available_at = now() where id = :job;
select count(*) from queue.claim(worker => 'w', queues => '{h25}') \g /dev/null
update queue.jobs set lease_expires_at = now() - interval '1 second' where id = :job;
select queue.maintain() \g /dev/null
select is((select jsonb_array_length(errors) from queue.jobs where id = :job), 25,
    'a lease taken back keeps the bound');
select is((select errors -> -1 ->> 'error' from queue.jobs where id = :job),
    'lease expired (worker w)', 'and its entry is the newest');

select * from finish();
rollback;
