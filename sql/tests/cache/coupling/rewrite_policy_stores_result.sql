-- Queue cache_policy 'rewrite': a completed job's result becomes the key's new value (fresh,
-- new version) in the completing transaction; without a result the key is invalidated.
-- Policy 'none' leaves the cache alone.
begin;
\ir ../_fixtures.psql
select plan(5);

select * from queue.configure_queue('rw', cache_policy => 'rewrite') \g /dev/null
select queue.enqueue('{}', queue => 'rw', cache_key => 'k', cache_value => '"old"') as j \gset
select version as v_old from cache.get('k') \gset
select token from queue.claim('w', queues => '{rw}') \gset
select queue.complete(:j, :'token', result => '"new"') \g /dev/null
select is((select value from cache.get('k')), '"new"'::jsonb, 'the result is the new value');
select is((select stale from cache.get('k')), false, 'fresh');
select cmp_ok((select version from cache.get('k')), '>', :v_old::bigint, 'at a new version');

select queue.enqueue('{}', queue => 'rw', cache_key => 'k') as j \gset
select token from queue.claim('w', queues => '{rw}') \gset
select queue.complete(:j, :'token') \g /dev/null
select is((select stale from cache.get('k')), true, 'no result: invalidated');

select * from queue.configure_queue('quiet', cache_policy => 'none') \g /dev/null
select cache.put('q', '1') as vq \gset
select queue.enqueue('{}', queue => 'quiet', cache_key => 'q') as j \gset
select token from queue.claim('w', queues => '{quiet}') \gset
select queue.complete(:j, :'token') \g /dev/null
select is((select version from cache.get('q')), :vq::bigint, 'policy none: untouched');

select * from finish();
rollback;
