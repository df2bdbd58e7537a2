-- queue.enqueue with cache_key and cache_value writes the value through in the
-- enqueuer's transaction and the job carries its version; with cache_key alone the job
-- carries the key's current version (0 without an entry); claim returns both.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'q', cache_key => 'user:1',
    cache_value => '{"name": "Ana"}') as j1 \gset
select is((select value from cache.get('user:1')), '{"name": "Ana"}'::jsonb,
    'the value is written through');
select is((select cache_version from queue.jobs where id = :j1),
    (select version from cache.get('user:1')), 'the job carries its version');
select is((select reason from cache.log order by seq desc limit 1), 'enqueue',
    'logged as an enqueue write');

select queue.enqueue('{}', queue => 'q', cache_key => 'user:1') as j2 \gset
select is((select cache_version from queue.jobs where id = :j2),
    (select version from cache.get('user:1')), 'cache_key alone: the current version');
select queue.enqueue('{}', queue => 'q', cache_key => 'user:2') as j3 \gset
select is((select cache_version from queue.jobs where id = :j3), 0::bigint,
    'a key without entry: version 0');

select results_eq($$ select cache_key, cache_version from queue.claim('w', queues => '{q}', batch => 3) order by job_id $$,
    $$ select cache_key, cache_version from queue.jobs order by id $$,
    'claim returns cache_key and cache_version');

select * from finish();
rollback;
