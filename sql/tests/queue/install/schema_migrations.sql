-- The installer records applied migrations: 0001 is in queue.schema_migrations; the live
-- table ships its fillfactor and autovacuum settings (on each shard when sharded).
begin;
\ir ../_fixtures.psql
select plan(3);

select results_eq($$ select version from queue.schema_migrations where version = '0001' $$,
    array['0001'], 'migration 0001 is recorded');
select ok((select applied_at <= now() from queue.schema_migrations where version = '0001'),
    'with the time it was applied');
select ok(
    (select bool_and(coalesce(c.reloptions @> array['fillfactor=70'] and exists (
        select from unnest(c.reloptions) as o where o like 'autovacuum_vacuum_scale_factor=%'),
        false))
     from pg_class as c
     where (c.oid = 'queue.jobs'::regclass and c.relkind = 'r')
        or c.oid in (select i.inhrelid from pg_inherits as i
                     where i.inhparent = 'queue.jobs'::regclass)),
    'queue.jobs has fillfactor and autovacuum settings');

select * from finish();
rollback;
