-- A claim of several queues shares its batch between the queues with ready jobs, round-robin
-- within a priority level (a backlog enqueued first does not starve a queue behind it), each
-- queue in its own order; a higher priority still goes first.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue(jsonb_build_object('n', g), queue => 'a') from generate_series(1, 30) as g
\g /dev/null
select queue.enqueue(jsonb_build_object('n', g), queue => 'b') from generate_series(1, 5) as g
\g /dev/null

create temp table got as select * from queue.claim('w', queues => '{a,b}', batch => 8);
select is((select count(*) from got where queue = 'b'), 4::bigint,
    'the queue enqueued last gets half the batch');
select is((select array_agg((payload ->> 'n')::int order by job_id) from got where queue = 'a'),
    array[1, 2, 3, 4], 'each queue gives its oldest jobs');
select is((select array_agg((payload ->> 'n')::int order by job_id) from got where queue = 'b'),
    array[1, 2, 3, 4], 'the other too');

select queue.enqueue('{"n": "urgent"}', queue => 'a', priority => 5) from generate_series(1, 2)
\g /dev/null
create temp table got2 as select * from queue.claim('w', queues => '{a,b}', batch => 4);
select is((select count(*) from got2 where priority = 5), 2::bigint,
    'a higher priority goes first, whatever the queue');
select is((select array_agg(queue order by queue) from got2 where priority = 0),
    array['a', 'b'], 'then the rest of the batch is shared');

select * from finish();
rollback;
