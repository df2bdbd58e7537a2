-- enqueue returns the new job's id; the job is pending in queue 'default', priority 0, ready
-- now, with the queue's default max_attempts (5) and no attempt spent.
begin;
\ir ../_fixtures.psql
select plan(11);

select queue.enqueue('{"n": 1}') as j1 \gset
select queue.enqueue('{"n": 2}') as j2 \gset

select isnt(:j1::bigint, null, 'enqueue returns an id');
select cmp_ok(:j2::bigint, '>', :j1::bigint, 'a later enqueue gets a larger id');
select is((select count(*) from queue.jobs), 2::bigint, 'one row per enqueue');
select is((select payload from queue.jobs where id = :j1), '{"n": 1}'::jsonb, 'payload stored');
select is((select queue from queue.jobs where id = :j1), 'default', 'queue defaults to default');
select is((select status from queue.jobs where id = :j1), 'pending', 'new job is pending');
select is((select priority from queue.jobs where id = :j1), 0, 'priority defaults to 0');
select is((select attempt from queue.jobs where id = :j1), 0, 'no attempt spent yet');
select is((select max_attempts from queue.jobs where id = :j1), 5,
    'max_attempts comes from the queue default (5)');
select is((select available_at from queue.jobs where id = :j1), now(), 'ready at once');
select is(
    (select row(category, dedup_key, token, worker, lease_expires_at)::text
     from queue.jobs where id = :j1),
    '(,,,,)', 'no category, dedup key, token, worker or lease');

select * from finish();
rollback;
