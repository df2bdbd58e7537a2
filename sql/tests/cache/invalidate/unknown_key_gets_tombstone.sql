-- Invalidating a key with no entry leaves a tombstone (no value, stale) so the key keeps its
-- version: a job enqueued now carries it, and a refill must present it.
begin;
\ir ../_fixtures.psql
select plan(4);

select cache.invalidate('ghost') as v \gset
select is((select count(*) from cache.get('ghost')), 1::bigint, 'get answers one row');
select is((select value from cache.get('ghost')), null::jsonb, 'with no value');
select is((select stale from cache.get('ghost')), true, 'flagged stale');
select is((select version from cache.get('ghost')), :v::bigint, 'at the tombstone''s version');

select * from finish();
rollback;
