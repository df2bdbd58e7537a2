-- enqueue_many inserts one job per payload and returns the ids in input order; the options
-- apply to every job; an empty array inserts nothing.
begin;
\ir ../_fixtures.psql
select plan(8);

create temp table got as
select row_number() over () as n, id
from queue.enqueue_many(
    array['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']::jsonb[],
    queue => 'bulk', category => 'c', priority => 3, delay => interval '10 seconds',
    max_attempts => 2
) as id;

select is((select count(*) from got), 4::bigint, 'one id per payload');
select is(
    (select array_agg((j.payload ->> 'n')::int order by g.n)
     from got as g join queue.jobs as j on j.id = g.id),
    array[1, 2, 3, 4], 'the i-th id is the job of the i-th payload');
select is((select count(distinct id) from got), 4::bigint, 'distinct ids');
select is(
    (select count(*) from queue.jobs
     where queue = 'bulk' and category = 'c' and priority = 3 and max_attempts = 2
       and available_at = now() + interval '10 seconds' and status = 'pending'),
    4::bigint, 'queue, category, priority, max_attempts and delay apply to every job');
select is_empty($$ select * from queue.enqueue_many('{}'::jsonb[]) $$,
    'an empty array returns no ids');
select is((select count(*) from queue.jobs), 4::bigint, 'and inserts nothing');

create temp table dd as
select row_number() over () as n, id
from queue.enqueue_many(array['{"a": 1}', '{"a": 2}', '{"a": 1}']::jsonb[],
    dedup_keys => array['x', null, 'x']) as id;
select is(
    (select array_agg(j.payload ->> 'a' order by d.n)
     from dd as d join queue.jobs as j on j.id = d.id),
    array['1', '2', '1'],
    'dedup_keys: ids in input order');
select is((select id from dd where n = 3), (select id from dd where n = 1),
    'a key repeated in the call yields the first job''s id');

select * from finish();
rollback;
