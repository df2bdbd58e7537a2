-- Refresh on read: with refresh_queue, a missing or stale key gets exactly one refresh job in that
-- queue (payload {"key": ...}, dedup_key = the key), however many readers ask; a fresh key
-- gets none.
begin;
\ir ../_fixtures.psql
select plan(6);

select cache.put('fresh', '1') \g /dev/null
select * from cache.get('fresh', refresh_queue => 'refill') \g /dev/null
select is((select count(*) from queue.jobs), 0::bigint, 'a fresh key enqueues nothing');

select * from cache.get('missing', refresh_queue => 'refill') \g /dev/null
select * from cache.get('missing', refresh_queue => 'refill') \g /dev/null
select is((select count(*) from queue.jobs where queue = 'refill'), 1::bigint,
    'two readers of a missing key: one job');
select is((select payload from queue.jobs where queue = 'refill'), '{"key": "missing"}'::jsonb,
    'the payload names the key');
select is((select dedup_key from queue.jobs where queue = 'refill'), 'missing',
    'deduplicated by the key');

select cache.put('old', '2') \g /dev/null
update cache.entries set expires_at = now() - interval '1 second' where key = 'old';
select * from cache.get('old', refresh_queue => 'refill') \g /dev/null
select * from cache.get('old', refresh_queue => 'refill') \g /dev/null
select is((select count(*) from queue.jobs where dedup_key = 'old'), 1::bigint,
    'an expired key: one job');
select * from cache.get('old') \g /dev/null
select is((select count(*) from queue.jobs), 2::bigint, 'without refresh_queue nothing is enqueued');

select * from finish();
rollback;
