-- Read-repair: when the primary store's value (loaded) does not match the entry's
-- checksum, the entry is invalidated (reason 'read-repair', logged so every local cache drops
-- it) and answered with repaired = true and its new version; a match answers nothing.
begin;
\ir ../_fixtures.psql
select plan(5);

select cache.put('k', '{"price": 10}') as v \gset
select is_empty(format($$ select * from cache.validate('{k}', array[%s]::bigint[],
    loaded => array['{"price": 10}']::jsonb[]) $$, :v), 'a matching value answers nothing');

-- Someone wrote the primary store behind the cache's back.
select * from cache.validate('{k}', array[:v]::bigint[], loaded => array['{"price": 12}']::jsonb[])
\gset r_
select is(:'r_repaired'::boolean, true, 'a mismatch is repaired');
select cmp_ok(:r_version::bigint, '>', :v::bigint, 'at a new version');
select is((select stale from cache.get('k')), true, 'the entry is now stale');
select is((select reason from cache.log order by seq desc limit 1), 'read-repair',
    'and the invalidation is logged');

select * from finish();
rollback;
