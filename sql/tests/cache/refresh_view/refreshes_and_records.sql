-- cache.refresh_view (the refresh job's body) refreshes the view and records the changes it
-- covered, so the view is no longer due; a refresh job claimed by one worker gates the view's
-- category. 42704 for a view that is not registered, 22004 for null.
begin;
\ir ../_fixtures.psql
select plan(8);

create table andal_cache_test.t (id int primary key, v int);
create materialized view andal_cache_test.mv as select id, v from andal_cache_test.t;
create unique index on andal_cache_test.mv (id);
select cache.register_view('andal_cache_test.mv', '1 hour', 1);
select cache.track('andal_cache_test.mv', 'andal_cache_test.t');
insert into andal_cache_test.t values (1, 10);
update cache.views set seen_changes = -1;  -- one pending change (see refresh_due tests)

select job_id from cache.refresh_due() \gset
select job_id as claimed, token, payload from queue.claim('w1', queues => '{andal.refresh}') \gset
select is(:claimed::bigint, :job_id::bigint, 'a worker claims the refresh');
-- A second refresh job of the same view (forced past dedup) waits for the category gate.
select queue.enqueue('{"view": "andal_cache_test.mv"}', queue => 'andal.refresh',
    category => 'refresh:andal_cache_test.mv') \g /dev/null
select is_empty($$ select * from queue.claim('w2', queues => '{andal.refresh}') $$,
    'one refresh of a view at a time');

select lives_ok($$ select cache.refresh_view('andal_cache_test.mv') $$, 'the job body runs');
select is((select v from andal_cache_test.mv where id = 1), 10, 'the view has the new row');
select queue.complete(:claimed, :'token') \g /dev/null
select is_empty($$ select * from cache.refresh_due() $$,
    'the changes it covered are no longer pending');

select throws_ok($$ select cache.refresh_view(null) $$, '22004', 'view must not be null',
    'null view');
select throws_ok($$ select cache.refresh_view('andal_cache_test.t') $$, '42704',
    'view andal_cache_test.t is not registered', 'unregistered');
select is((select seen_changes from cache.views), cache._view_changes('andal_cache_test.mv'),
    'seen_changes records the count read before the refresh');

select * from finish();
rollback;
