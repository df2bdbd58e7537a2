-- Every write appends one row to cache.log in the writer's transaction: seq = the new
-- version, xid = the writer's top-level transaction id, op 'put'.
begin;
\ir ../_fixtures.psql
select plan(4);

select cache.put('k', '1') as v \gset
select is((select count(*) from cache.log), 1::bigint, 'one log row');
select is((select seq from cache.log), :v::bigint, 'seq is the new version');
select is((select xid from cache.log), pg_current_xact_id(), 'xid is the writer''s');
select is((select op from cache.log), 'put', 'op is put');

select * from finish();
rollback;
