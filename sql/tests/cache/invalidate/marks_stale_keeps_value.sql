-- cache.invalidate marks the entry stale, keeps its old value (for readers that accept stale
-- data), bumps the version and logs op 'invalidate' with the reason.
begin;
\ir ../_fixtures.psql
select plan(6);

select cache.put('k', '{"a": 1}') as v1 \gset
select cache.invalidate('k', reason => 'order 7 shipped') as v2 \gset

select cmp_ok(:v2::bigint, '>', :v1::bigint, 'a new version');
select is((select stale from cache.get('k')), true, 'the entry is stale');
select is((select value from cache.get('k')), '{"a": 1}'::jsonb, 'its old value is kept');
select is((select version from cache.get('k')), :v2::bigint, 'at the new version');
select results_eq($$ select op, reason from cache.log order by seq $$,
    $$ values ('put', null::text), ('invalidate', 'order 7 shipped') $$,
    'both changes are logged, with the reason');
select is((select changes from cache.entries where key = 'k'), 1::bigint,
    'counted as a change for the adaptive TTL');

select * from finish();
rollback;
