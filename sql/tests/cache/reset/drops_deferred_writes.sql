-- cache.reset empties the cache as a crash would, including the writes of finished jobs that
-- were deferred while a producer held their key: applied after the reset, one would bring a
-- value from before it back.
begin;
\ir ../_fixtures.psql
select plan(3);

select cache.put('kept', '1') \g /dev/null
insert into cache.deferred_writes (key, op, value, reason)
values ('deferred', 'put', '"old"', 'a producer held the key');
select cache.reset() \g /dev/null
select is((select count(*) from cache.deferred_writes), 0::bigint, 'the deferred write is gone');
select queue.maintain() \g /dev/null
select is((select count(*) from cache.entries where key = 'deferred'), 0::bigint,
    'and maintain brings nothing back');
select is((select count(*) from cache.entries), 0::bigint, 'the cache is empty');

select * from finish();
rollback;
