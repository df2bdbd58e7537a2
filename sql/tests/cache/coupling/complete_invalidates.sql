-- Completing a job invalidates its cache key in the same transaction (default policy
-- 'invalidate'); so does a failed attempt (reason 'retry') and a death (reason 'dead').
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'q', cache_key => 'k', cache_value => '1') as j \gset
select token from queue.claim('w', queues => '{q}') \gset
select queue.complete(:j, :'token') \g /dev/null
select is((select stale from cache.get('k')), true, 'completion invalidates');
select is((select reason from cache.log order by seq desc limit 1), 'completed',
    'reason completed');

select cache.put('k', '2') \g /dev/null
select queue.enqueue('{}', queue => 'q', cache_key => 'k', max_attempts => 2) as j \gset
select token from queue.claim('w', queues => '{q}') \gset
select queue.fail(:j, :'token', 'boom', retry_in => '0') \g /dev/null
select is((select stale from cache.get('k')), true, 'a retry invalidates');
select is((select reason from cache.log order by seq desc limit 1), 'retry', 'reason retry');

select cache.put('k', '3') \g /dev/null
select token from queue.claim('w', queues => '{q}') \gset
select queue.fail(:j, :'token', 'boom again') \g /dev/null
select is((select stale from cache.get('k')), true, 'death invalidates');
select is((select reason from cache.log order by seq desc limit 1), 'dead', 'reason dead');

select * from finish();
rollback;
