-- A long backlog of a category that cannot run (full or paused) costs a claim nothing: the
-- claim never reads past it, whether it names every queue, the backlog's queue or several.
-- Counted as index entries read (deterministic, unlike time): before the fix a claim read
-- every entry of the backlog twice.
begin;
\ir ../_fixtures.psql
select plan(7);

create function andal_test.index_reads() returns bigint
language sql volatile
as $$
    select coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)::bigint
    from pg_index as i
    join pg_class as c on c.oid = i.indrelid
    join pg_namespace as n on n.oid = c.relnamespace
    where n.nspname = 'queue'
$$;

-- category hog: limit 1, one running, 3,000 waiting at the highest priority
select queue.set_category_limit('hog', 1) \g /dev/null
select queue.enqueue_many(array(select '{}'::jsonb from generate_series(1, 3000)),
    queue => 'h', category => 'hog', priority => 1000) \g /dev/null
select is((select count(*) from queue.claim('w0', queues => '{h}')), 1::bigint,
    'one hog job runs: the category is full');
-- paused category: 3,000 waiting
select queue.set_category_limit('paused', 0) \g /dev/null
select queue.enqueue_many(array(select '{}'::jsonb from generate_series(1, 3000)),
    queue => 'o', category => 'paused', priority => 1000) \g /dev/null
select queue.enqueue_many(array(select '{}'::jsonb from generate_series(1, 10)), queue => 'o')
\g /dev/null
select queue.enqueue('{}', queue => 'o', category => 'free') as free_job \gset

select andal_test.index_reads() as r0 \gset
select is((select count(*) from queue.claim('w', batch => 2)), 2::bigint, 'every queue: claims');
select andal_test.index_reads() as r1 \gset
select cmp_ok((:r1 - :r0)::bigint, '<', 200::bigint, 'every queue: the blocked backlogs are not read');

select is((select count(*) from queue.claim('w', queues => '{o}', batch => 2)), 2::bigint,
    'one queue: claims');
select andal_test.index_reads() as r2 \gset
select cmp_ok((:r2 - :r1)::bigint, '<', 200::bigint, 'one queue: the blocked backlog is not read');

select is((select count(*) from queue.claim('w', queues => '{o,h}', batch => 2)), 2::bigint,
    'two queues: claims');
select andal_test.index_reads() as r3 \gset
select cmp_ok((:r3 - :r2)::bigint, '<', 200::bigint, 'two queues: the blocked backlogs are not read');

select * from finish();
rollback;
