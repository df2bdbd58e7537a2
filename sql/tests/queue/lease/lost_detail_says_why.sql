-- AN001's detail tells the holder of a stale token why it lost the job, truly: a job pending
-- again because its attempt failed and waits for its retry says so; one whose lease expired
-- (taken back) or that was released says "its lease expired or it was released".
begin;
\ir ../_fixtures.psql
select plan(4);

create function pg_temp.detail(stmt text) returns text language plpgsql as $$
declare v text;
begin
    execute stmt;
    return null;
exception when sqlstate 'AN001' then
    get stacked diagnostics v = pg_exception_detail;
    return v;
end $$;

-- failed, awaiting its retry
select queue.enqueue('{}', queue => 'q', max_attempts => 3) as j \gset
select token as t from queue.claim('w', queues => '{q}') \gset
select queue.fail(:j, :'t', 'boom', retry_in => '1 hour') \g /dev/null
select pg_temp.detail(format('select queue.complete(%s, %L)', :j, :'t')) as detail \gset
select alike(:'detail'::text, format('job %s is pending again: its attempt 1 failed '
    '(queue.fail) and waits for its retry at %%', :j),
    'a failed attempt awaiting its retry says so');
select unalike(:'detail'::text, '%lease expired%', 'and not that its lease expired');

-- released
select queue.enqueue('{}', queue => 'r') as r \gset
select token as t from queue.claim('w', queues => '{r}') \gset
select queue.release(:r, :'t') \g /dev/null
select is(pg_temp.detail(format('select queue.complete(%s, %L)', :r, :'t')),
    format('job %s is pending again (its lease expired or it was released)', :r),
    'a released job says so');

-- failed, then claimed and released again: no longer awaiting that retry
select queue.enqueue('{}', queue => 's', max_attempts => 3) as s \gset
select token as t1 from queue.claim('w', queues => '{s}') \gset
select queue.fail(:s, :'t1', 'boom', retry_in => '0') \g /dev/null
select token as t2 from queue.claim('w', queues => '{s}') \gset
select queue.release(:s, :'t2', delay => '1 minute') \g /dev/null
select is(pg_temp.detail(format('select queue.complete(%s, %L)', :s, :'t2')),
    format('job %s is pending again (its lease expired or it was released)', :s),
    'a job released after a failed attempt says released');

select * from finish();
rollback;
