-- A fail's error text is bounded (queue.config.max_error_bytes): longer texts are cut to the
-- bound, marked, whole characters only; the failure is always recorded. The AN001 detail
-- does not say which worker holds a job now.
begin;
\ir ../_fixtures.psql
select plan(6);

update queue.config set max_error_bytes = 2000;
select queue.enqueue('{}', queue => 'f', max_attempts => 1) as job \gset
select token from queue.claim(worker => 'w', queues => '{f}') \gset
select is(queue.fail(:job, :'token', repeat('é', 5000)), 'dead', 'the failure is recorded');
select ok((select octet_length(last_error) between 2000 and 2040 from queue.dead_letters
           where job_id = :job), 'cut to the bound (and a short mark)');
select ok((select last_error like '%... (cut at 2000 bytes)' from queue.dead_letters
           where job_id = :job), 'marked');

select queue.enqueue('{}', queue => 'g') as job2 \gset
select token as a_token from queue.claim(worker => 'secret-host-a', queues => '{g}') \gset
update queue.jobs set lease_expires_at = now() - interval '1 second' where id = :job2;
select count(*) from queue.claim(worker => 'secret-host-b', queues => '{g}') \g /dev/null
select throws_ok(format('select queue.heartbeat(%s, %L)', :job2, :'a_token'), 'AN001', null,
    'a stale token');
create function pg_temp.detail(stmt text) returns text language plpgsql as $$
declare v text;
begin
    execute stmt;
    return null;
exception when sqlstate 'AN001' then
    get stacked diagnostics v = pg_exception_detail;
    return v;
end $$;
select pg_temp.detail(format('select queue.heartbeat(%s, %L)', :job2, :'a_token')) as detail \gset
select alike(:'detail'::text, '%claimed again%'::text, 'the detail says why');
select unalike(:'detail'::text, '%secret-host-b%'::text, 'and not which worker holds the job now');

select * from finish();
rollback;
