-- cache.track: row changes are counted by PostgreSQL's statistics (no trigger on writes);
-- TRUNCATE, which they do not count, gets one statement-level trigger per source (however
-- many views track it) that counts it in the truncating transaction. Row counting through
-- the statistics needs committed transactions: tests/test_cache_views.py covers it.
begin;
\ir ../_fixtures.psql
select plan(8);

create table andal_cache_test.t (id int primary key, v int);
create materialized view andal_cache_test.mv as select id, v from andal_cache_test.t;
create unique index on andal_cache_test.mv (id);
create materialized view andal_cache_test.mv2 as select count(*) as n from andal_cache_test.t;
create unique index on andal_cache_test.mv2 (n);
select cache.register_view('andal_cache_test.mv', '1 minute', 100);
select cache.register_view('andal_cache_test.mv2', '1 minute', 100);
select cache.track('andal_cache_test.mv', 'andal_cache_test.t');
select cache.track('andal_cache_test.mv2', 'andal_cache_test.t');
select cache.track('andal_cache_test.mv2', 'andal_cache_test.t');

select is((select array_agg(tgname::text) from pg_trigger
           where tgrelid = 'andal_cache_test.t'::regclass and not tgisinternal),
    array['andal_track_truncate'], 'one trigger per source, for TRUNCATE only');
select is((select count(*) from cache.view_sources), 2::bigint, 'two views track it');

insert into andal_cache_test.t select g, g from generate_series(1, 10) as g;
select is((select count(*) from cache.source_changes), 0::bigint, 'writes write nothing');

truncate andal_cache_test.t;
select is((select sum(changes)::bigint from cache.source_changes), 1::bigint,
    'a TRUNCATE is counted');
select is(cache._view_changes('andal_cache_test.mv'), 1::bigint, 'toward the view');

savepoint s;
truncate andal_cache_test.t;
rollback to savepoint s;
select is((select sum(changes)::bigint from cache.source_changes), 1::bigint,
    'a rolled-back TRUNCATE counts nothing');

select throws_ok($$ select cache.track('andal_cache_test.t', 'andal_cache_test.t') $$, '42704',
    'view andal_cache_test.t is not registered', 'unregistered view');
select throws_ok($$ select cache.track('andal_cache_test.mv', 'andal_cache_test.mv2') $$, '22023',
    'source must be a table (andal_cache_test.mv2 is not)', 'a view as source');

select * from finish();
rollback;
