-- queue.metrics() appends the cache's figures (cache._metrics()): entries by state,
-- recent changes, read-repairs, age of the last change, epoch, per-view lag and backlog.
begin;
\ir ../_fixtures.psql
select plan(6);

create table andal_cache_test.t (id int primary key);
create materialized view andal_cache_test.mv as select id from andal_cache_test.t;
create unique index on andal_cache_test.mv (id);
select cache.register_view('andal_cache_test.mv', '1 hour', 100);
select cache.track('andal_cache_test.mv', 'andal_cache_test.t');
update cache.views set seen_changes = -1;  -- one pending change

select cache.put('a', '1') \g /dev/null
select cache.put('b', '2') \g /dev/null
select cache.invalidate('b') \g /dev/null
select queue.metrics() as m \gset

select matches(:'m'::text, 'andal_cache_entries\{state="fresh"\} 1\n', 'fresh entries');
select matches(:'m'::text, 'andal_cache_entries\{state="stale"\} 1\n', 'stale entries');
select matches(:'m'::text, 'andal_cache_changes\{op="invalidate",window="1m"\} 1\n',
    'recent invalidations');
select matches(:'m'::text, 'andal_cache_seconds_since_last_change [0-9.]+\n', 'age of the last change');
select matches(:'m'::text, 'andal_cache_view_pending_changes\{view="andal_cache_test.mv"\} 1\n',
    'a view''s pending changes');
select matches(:'m'::text, 'andal_cache_epoch [0-9]+\n', 'the epoch');

select * from finish();
rollback;
