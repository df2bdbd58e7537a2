-- claim and complete change jobs: inside a READ ONLY transaction (or on a standby) they refuse
-- up front with andal's own message (SQLSTATE 25006, as PostgreSQL's), naming the call and
-- what to do, and nothing is written.
begin;
\ir ../_fixtures.psql
select plan(5);

-- runs `stmt` read-only in a subtransaction (the setting goes with it); its error
create function pg_temp.read_only(stmt text) returns text language plpgsql as $$
begin
    set transaction read only;
    execute stmt;
    return 'no error';
exception when others then
    return sqlstate || ': ' || sqlerrm;
end $$;

select queue.enqueue('{}', queue => 'ro') as j \gset
select is(pg_temp.read_only($$ select * from queue.claim('w', queues => '{ro}') $$),
    '25006: queue.claim writes (it changes the jobs it is given): it cannot run in a '
    'read-only transaction', 'claim refuses with andal''s message');
select token from queue.claim('w', queues => '{ro}') \gset
select is(pg_temp.read_only(format('select queue.complete(%s, %L)', :j, :'token')),
    '25006: queue.complete writes (it changes the jobs it is given): it cannot run in a '
    'read-only transaction', 'complete too');
select is(pg_temp.read_only(format('select * from queue.complete_many(array[%s]::bigint[], '
        'array[%L]::uuid[])', :j, :'token')),
    '25006: queue.complete_many writes (it changes the jobs it is given): it cannot run in a '
    'read-only transaction', 'complete_many too');
select is(pg_temp.read_only(format('select * from queue.complete_many_then_claim(array[%s]::bigint[], '
        'array[%L]::uuid[], null, ''w'', ''{ro}'', 1, null)', :j, :'token')),
    '25006: queue.complete_many writes (it changes the jobs it is given): it cannot run in a '
    'read-only transaction', 'complete_many_then_claim too');
select is((select status from queue.jobs where id = :j), 'running', 'the job still runs');

select * from finish();
rollback;
