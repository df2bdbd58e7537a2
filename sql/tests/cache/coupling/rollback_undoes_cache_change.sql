-- The job's state change and its cache change are one transaction: rolling back the
-- completion rolls back the invalidation and its log row.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}', queue => 'q', cache_key => 'k', cache_value => '1') as j \gset
select token from queue.claim('w', queues => '{q}') \gset
select count(*) as log_before from cache.log \gset
savepoint before_complete;
select queue.complete(:j, :'token') \g /dev/null
select is((select stale from cache.get('k')), true, 'inside: invalidated');
rollback to savepoint before_complete;
select is((select stale from cache.get('k')), false, 'rolled back: fresh again');
select is((select count(*) from cache.log), :log_before::bigint, 'and no log row is left');

select * from finish();
rollback;
