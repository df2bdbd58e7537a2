-- cache.track and cache.untrack touch only the trigger andal made: a table with someone
-- else's trigger of andal's name is refused (42710) and that trigger survives. After a
-- tracked table is dropped, untrack and unregister_view still work (no dynamic SQL on a
-- dangling oid).
begin;
\ir ../_fixtures.psql
select plan(6);

create table andal_cache_test.t (id int primary key, v int);
create table andal_cache_test.other (id int);
create materialized view andal_cache_test.mv as select id, v from andal_cache_test.t;
create unique index on andal_cache_test.mv (id);
select cache.register_view('andal_cache_test.mv', '1 minute', 100);

create function andal_cache_test.mine() returns trigger language plpgsql
as $$ begin return null; end $$;
create trigger andal_track_truncate after truncate on andal_cache_test.other
for each statement execute function andal_cache_test.mine();
select throws_ok($$ select cache.track('andal_cache_test.mv', 'andal_cache_test.other') $$,
    '42710', null, 'a foreign trigger of andal''s name is refused');
select is((select count(*) from pg_trigger
           where tgrelid = 'andal_cache_test.other'::regclass
             and tgfoid = 'andal_cache_test.mine()'::regprocedure), 1::bigint,
    'the foreign trigger is untouched');
select is((select count(*) from cache.view_sources), 0::bigint, 'nothing was tracked');

-- a tracked table that is dropped
create table andal_cache_test.gone (id int);
select cache.track('andal_cache_test.mv', 'andal_cache_test.gone');
select 'andal_cache_test.gone'::regclass::oid as gone \gset
drop table andal_cache_test.gone;
select lives_ok(format('select cache.untrack(%L, %s::oid::regclass)', 'andal_cache_test.mv',
    :gone), 'untrack after the table was dropped');
select cache.track('andal_cache_test.mv', 'andal_cache_test.t');
create table andal_cache_test.gone2 (id int);
select cache.track('andal_cache_test.mv', 'andal_cache_test.gone2');
drop table andal_cache_test.gone2;
select lives_ok($$ select cache.unregister_view('andal_cache_test.mv') $$,
    'unregister_view after a tracked table was dropped');
select is((select count(*) from pg_trigger
           where tgrelid = 'andal_cache_test.t'::regclass and tgname = 'andal_track_truncate'),
    0::bigint, 'andal''s own trigger went with the last view');

select * from finish();
rollback;
