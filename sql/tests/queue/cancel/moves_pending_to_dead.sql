-- cancel withdraws a pending job into the dead letters with reason cancelled.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{"c": 1}', delay => interval '1 hour') as j \gset
select lives_ok(format('select queue.cancel(%s)', :j), 'cancel a pending (scheduled) job');
select is((select count(*) from queue.jobs), 0::bigint, 'it left the live table');
select is((select row(reason, payload, attempt)::text from queue.dead_letters where job_id = :j),
    row('cancelled', '{"c": 1}'::jsonb, 0)::text, 'dead letter with reason cancelled');
select is_empty($$ select * from queue.claim('w') $$, 'it is never claimed');

select * from finish();
rollback;
