-- After andal's tables were vacuumed empty (statistics: no rows), thousands of new queue and
-- category names in one transaction must not make each lookup read all the rows made so far.
-- Counted as rows the two tables returned to sequential scans (deterministic, unlike time).
begin;
\ir ../_fixtures.psql
select plan(2);

-- what vacuum records for an empty table
update pg_class set reltuples = 0, relpages = 0
where oid in ('queue.queues'::regclass, 'queue.categories'::regclass);
select pg_stat_get_xact_tuples_returned('queue.queues'::regclass) as q0,
    pg_stat_get_xact_tuples_returned('queue.categories'::regclass) as c0 \gset
select count(queue.enqueue('{}', queue => 'n' || g, category => 'c' || g))
from generate_series(1, 500) as g \g /dev/null
select cmp_ok(pg_stat_get_xact_tuples_returned('queue.queues'::regclass) - :q0, '<', 1000::bigint,
    'queue lookups did not read the other new rows');
select cmp_ok(pg_stat_get_xact_tuples_returned('queue.categories'::regclass) - :c0, '<',
    1000::bigint, 'category lookups did not read the other new rows');

select * from finish();
rollback;
