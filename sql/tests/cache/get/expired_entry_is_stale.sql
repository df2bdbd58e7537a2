-- An entry past its TTL is answered with stale = true (and its value, for readers that accept
-- stale data).
begin;
\ir ../_fixtures.psql
select plan(3);

select cache.put('k', '"v"', ttl => interval '1 minute') \g /dev/null
select is((select stale from cache.get('k')), false, 'fresh within its ttl');
update cache.entries set expires_at = now() - interval '1 second' where key = 'k';
select is((select stale from cache.get('k')), true, 'stale once expired');
select is((select value from cache.get('k')), '"v"'::jsonb, 'the old value is still answered');

select * from finish();
rollback;
