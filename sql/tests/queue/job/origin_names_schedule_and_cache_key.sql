-- queue.job_origin: the schedule and tick that enqueued a job, or the cache key it refills;
-- nulls for a plain job; no row for a job andal does not remember; a producer's own
-- "_tick" that is no time is not taken for a schedule's mark; dead letters keep the key.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.schedule(name => 'five', queue => 'q', every => '5 minutes') \g /dev/null
update queue.schedules set next_at = now() - interval '1 minute' where name = 'five';
select queue.maintain() \g /dev/null
select id as ticked from queue.jobs where queue = 'q' \gset
select is((select schedule from queue.job_origin(job_id => :ticked)), 'five',
    'a tick''s job names its schedule');
select is((select tick from queue.job_origin(job_id => :ticked)),
    (select s.tick from queue.schedule_ticks as s where s.job_id = :ticked),
    'and the tick that enqueued it');

select queue.enqueue('{}', queue => 'q', cache_key => 'user:7') as refill \gset
select is((select cache_key from queue.job_origin(job_id => :refill)), 'user:7',
    'a refill names its cache key');
select is((select schedule from queue.job_origin(job_id => :refill)), null,
    'and no schedule');

select queue.enqueue('{"_schedule": "mine", "_tick": "soon"}', queue => 'q') as own \gset
select is((select schedule from queue.job_origin(job_id => :own)), null,
    'a payload''s own "_tick" that is no time is no schedule''s mark');
select is((select count(*)::int from queue.job_origin(job_id => 424242)), 0,
    'no row for a job andal does not remember');

update queue.jobs set max_attempts = 1 where id = :refill;
delete from queue.jobs where id <> :refill;
select token as t from queue.claim('w', queues => '{q}') \gset
select queue.fail(:refill, :'t', 'broken') \g /dev/null
select is((select cache_key from queue.job_origin(job_id => :refill)), 'user:7',
    'a dead letter keeps its cache key');

select throws_ok('select * from queue.job_origin(job_id => null)', '22004', null,
    'a null id is refused');
set local role andal_monitor;
select lives_ok('select * from queue.job_origin(job_id => 1)', 'a monitor may ask');
rollback;
