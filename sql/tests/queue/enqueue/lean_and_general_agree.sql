-- The common call of queue.enqueue takes a lean body (queue._enqueue_lean) whose checks are
-- plain expressions in front of the check helpers; every other call takes queue._enqueue,
-- which calls the helpers. Both must answer every input alike: the same id or nothing, the
-- same SQLSTATE and message, at each boundary of a queue name (length in characters) and of
-- a payload (null, not an object, at and over the queue's limit in bytes of JSON text).
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.configure_queue(queue => 'small', payload_limit => 20) is not null as configured
\gset

-- outcome(body, payload, queue): 'ok' or 'SQLSTATE: message' of one enqueue through one body
create function pg_temp.outcome(body text, payload jsonb, queue text) returns text
language plpgsql as $$
begin
    if body = 'lean' then
        perform queue.enqueue(payload => payload, queue => queue);
    else
        perform queue._enqueue(payload, queue, null, null, null, null, null, null, null, null,
            null);
    end if;
    return 'ok';
exception when others then
    return sqlstate || ': ' || sqlerrm;
end
$$;

create temp table inputs (n serial, payload jsonb, queue text);
insert into inputs (payload, queue)
select p.payload, q.queue
from (values (null), (''), ('a'), (repeat('q', 127)), (repeat('q', 128)), (repeat('q', 129)),
        (repeat('é', 128)), (repeat('é', 129)), ('small')) as q (queue)
cross join (values (null::jsonb), ('[]'), ('1'), ('"s"'), ('null'), ('{}'),
        ('{"a": "xxxxxxxxxxx"}'), ('{"a": "xxxxxxxxxxxx"}'), ('{"n": 1e30}')) as p (payload);

select is(
    (select octet_length('{"a": "xxxxxxxxxxx"}'::jsonb::text)), 20,
    'the boundary payload is exactly at the small queue''s limit');

create temp table outcomes as
select i.n, pg_temp.outcome('lean', i.payload, i.queue) as lean,
    pg_temp.outcome('general', i.payload, i.queue) as general
from inputs as i;

select is(
    (select count(*) from outcomes as o where o.lean is distinct from o.general),
    0::bigint,
    'the lean and the general body answer every input alike');

select ok(
    (select count(distinct left(o.lean, 5)) from outcomes as o) = 4,
    'the inputs reach every kind of outcome: ok, 22004, 22023 and 54000');

-- both bodies wrote the same jobs (queue, payload, attempts, timeout) for the accepted inputs
select is(
    (select count(*) from (
        select j.queue, j.payload, j.max_attempts, j.timeout, j.status, j.priority,
            j.category, j.dedup_key, j.cache_key, j.trace_context, count(*) as n
        from queue.jobs as j
        group by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
    ) as g where g.n % 2 <> 0),
    0::bigint,
    'each accepted input wrote one job through each body, with the same columns');

select * from finish();
rollback;
