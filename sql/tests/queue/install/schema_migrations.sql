-- The installer records applied migrations: 0001 is in queue.schema_migrations; the live
-- table ships its fillfactor and autovacuum settings.
begin;
\ir ../_fixtures.psql
select plan(3);

select results_eq($$ select version from queue.schema_migrations where version = '0001' $$,
    array['0001'], 'migration 0001 is recorded');
select ok((select applied_at <= now() from queue.schema_migrations where version = '0001'),
    'with the time it was applied');
select ok(
    (select reloptions @> array['fillfactor=70'] and exists (
        select from unnest(reloptions) as o where o like 'autovacuum_vacuum_scale_factor=%')
     from pg_class where oid = 'queue.jobs'::regclass),
    'queue.jobs has fillfactor and autovacuum settings');

select * from finish();
rollback;
