-- cache.register_view: 22004 null arguments; 22023 not a materialized view, max_lag <= 0,
-- max_changes < 1; 55000 no unique index usable by REFRESH ... CONCURRENTLY. Nothing is
-- registered by a rejected call.
begin;
\ir ../_fixtures.psql
select plan(8);

create table andal_cache_test.t (id int primary key, v int);
create materialized view andal_cache_test.mv as select id, v from andal_cache_test.t;
create materialized view andal_cache_test.mv_noidx as select id, v from andal_cache_test.t;
create materialized view andal_cache_test.mv_partial as select id, v from andal_cache_test.t;
create unique index on andal_cache_test.mv_partial (id) where v > 0;
create unique index on andal_cache_test.mv (id);

select throws_ok($$ select cache.register_view(null, '1 minute', 10) $$, '22004',
    'view must not be null', 'null view');
select throws_ok($$ select cache.register_view('andal_cache_test.mv', null, 10) $$, '22004',
    'max_lag must not be null', 'null max_lag');
select throws_ok($$ select cache.register_view('andal_cache_test.t', '1 minute', 10) $$, '22023',
    'view must be a materialized view (andal_cache_test.t is not)', 'a table');
select throws_ok($$ select cache.register_view('andal_cache_test.mv', '0', 10) $$, '22023',
    'max_lag must be positive (got 00:00:00)', 'zero lag');
select throws_ok($$ select cache.register_view('andal_cache_test.mv', '1 minute', 0) $$, '22023',
    'max_changes must be at least 1 (got 0)', 'zero changes');
select throws_ok($$ select cache.register_view('andal_cache_test.mv_noidx', '1 minute', 10) $$,
    '55000', 'view andal_cache_test.mv_noidx has no unique index on plain columns',
    'no unique index');
select throws_ok($$ select cache.register_view('andal_cache_test.mv_partial', '1 minute', 10) $$,
    '55000', 'view andal_cache_test.mv_partial has no unique index on plain columns',
    'only a partial unique index');
select is((select count(*) from cache.views), 0::bigint, 'nothing registered');

select * from finish();
rollback;
