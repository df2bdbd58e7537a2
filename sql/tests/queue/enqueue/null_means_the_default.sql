-- A null optional argument means its default, for every one of them: priority 0, no delay,
-- the queue's max_attempts and timeout; the same in enqueue_many and the timeout overloads.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.configure_queue('nulls', max_attempts => 4) \g /dev/null
select queue.enqueue('{}', queue => 'nulls', category => null, priority => null,
    delay => null, max_attempts => null, dedup_key => null, cache_key => null,
    cache_value => null) as j1 \gset
select queue.enqueue('{}', timeout => null, queue => 'nulls', priority => null,
    delay => null) as j2 \gset
select array_agg(id order by id) as many from queue.enqueue_many(array['{}', '{}']::jsonb[],
    queue => 'nulls', priority => null, delay => null, max_attempts => null,
    dedup_keys => null) as id \gset
select array_agg(id order by id) as many_t from queue.enqueue_many(array['{}']::jsonb[],
    timeout => null, queue => 'nulls', priority => null, delay => null,
    dedup_keys => array['k']) as id \gset

select is((select priority from queue.jobs where id = :j1), 0, 'enqueue: null priority is 0');
select is((select available_at from queue.jobs where id = :j1), now(),
    'enqueue: null delay is no delay');
select is((select max_attempts from queue.jobs where id = :j1), 4,
    'enqueue: null max_attempts is the queue''s');
select is((select priority from queue.jobs where id = :j2), 0, 'enqueue (timeout form): 0');
select is((select available_at from queue.jobs where id = :j2), now(),
    'enqueue (timeout form): no delay');
select is((select count(*) from queue.jobs where id = any (:'many'::bigint[])
    and priority = 0 and available_at = now() and max_attempts = 4), 2::bigint,
    'enqueue_many: null priority, delay and max_attempts are the defaults');
select is((select count(*) from queue.jobs where id = any (:'many_t'::bigint[])
    and priority = 0 and available_at = now()), 1::bigint,
    'enqueue_many (timeout form, with keys): the defaults');
select is((select status from queue.jobs where id = :j1), 'pending',
    'a job enqueued with nulls is ready now');
select throws_ok($$ select queue.enqueue(null) $$, '22004', 'payload must not be null',
    'the payload stays required');
select throws_ok($$ select queue.enqueue('{}', queue => null) $$, '22004',
    'queue must not be null', 'the queue name stays required (a null there is a bug)');

select * from finish();
rollback;
