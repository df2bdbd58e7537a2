-- cache.register_view records a view with its limits; registering again updates them;
-- cache.unregister_view forgets it and drops tracking no other view needs (42704 if unknown).
begin;
\ir ../_fixtures.psql
select plan(5);

create table andal_cache_test.t (id int primary key, v int);
create materialized view andal_cache_test.mv as select id, v from andal_cache_test.t;
create unique index on andal_cache_test.mv (id);

select cache.register_view('andal_cache_test.mv', '1 minute', 100);
select results_eq($$ select view::text, max_lag, max_changes from cache.views $$,
    $$ values ('andal_cache_test.mv', interval '1 minute', 100::bigint) $$, 'registered');
select cache.register_view('andal_cache_test.mv', '5 minutes', 7);
select results_eq($$ select max_lag, max_changes from cache.views $$,
    $$ values (interval '5 minutes', 7::bigint) $$, 'limits updated');

select cache.track('andal_cache_test.mv', 'andal_cache_test.t');
select cache.unregister_view('andal_cache_test.mv');
select is((select count(*) from cache.views), 0::bigint, 'unregistered');
select is((select count(*) from pg_trigger where tgrelid = 'andal_cache_test.t'::regclass
    and tgname = 'andal_track_changes'), 0::bigint, 'its source is no longer tracked');
select throws_ok($$ select cache.unregister_view('andal_cache_test.mv') $$, '42704',
    'view andal_cache_test.mv is not registered', 'unknown view');

select * from finish();
rollback;
