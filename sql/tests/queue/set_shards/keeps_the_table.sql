-- The layout is the migrations': queue.jobs is a partitioned table on both layouts, its
-- indexes are declared on it and every shard has each of them; set_shards replaces the
-- shards, never queue.jobs itself (a function compiled against it stays valid), and the
-- new shards keep the storage settings.
begin;
\ir ../_fixtures.psql
select plan(7);

select 'queue.jobs'::regclass::oid as jobs_oid \gset
select is((select relkind::text from pg_class where oid = 'queue.jobs'::regclass), 'p',
    'queue.jobs is partitioned');
select is(
    (select array_agg(c.relname::text order by c.relname)
     from pg_index as x join pg_class as c on c.oid = x.indexrelid
     where x.indrelid = 'queue.jobs'::regclass),
    array['jobs_dedup_idx', 'jobs_gated_idx', 'jobs_gated_pair_idx', 'jobs_gated_queue_idx',
          'jobs_lease_idx', 'jobs_pkey', 'jobs_ready_idx', 'jobs_ready_queue_idx'],
    'its indexes are declared on it');

select queue.enqueue('{"n": 1}', queue => 'kt') \g /dev/null
select ok(queue.set_shards(shards => 3) >= 1, 'three shards');
select is('queue.jobs'::regclass::oid, :'jobs_oid'::oid, 'queue.jobs is the same table');
select is(
    (select count(*)::int from pg_inherits as i join pg_index as x on x.indrelid = i.inhrelid
     where i.inhparent = 'queue.jobs'::regclass),
    3 * 8, 'each shard has each index');
select ok(
    (select bool_and(c.reloptions @> array['fillfactor=70'])
     from pg_inherits as i join pg_class as c on c.oid = i.inhrelid
     where i.inhparent = 'queue.jobs'::regclass),
    'the shards keep the storage settings');
select is((select count(*)::int from queue.jobs where queue = 'kt'), 1, 'the job is kept');

select * from finish();
rollback;
