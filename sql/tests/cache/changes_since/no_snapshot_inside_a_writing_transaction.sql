-- A snapshot taken inside a transaction that has an id does not list that transaction as
-- running, although its rows may still commit: changes_since returns no snapshot there (the
-- reader stays in watermark mode, which re-delivers instead of skipping). Snapshot mode is
-- exercised with real concurrent sessions in tests/test_cache_log.py.
begin;
\ir ../_fixtures.psql
select plan(3);

select andal_cache_test.epoch() as epoch \gset
select c.watermark as w0 from cache.changes_since(0) as c \gset
select cache.put('k', '1') \g /dev/null
select ok(pg_current_xact_id_if_assigned() is not null, 'this transaction has an id');
select ok((select bool_and(snapshot is null) from cache.changes_since(:w0, :epoch)),
    'no snapshot is returned');
select ok((select snapshot is null from cache.changes_since(0)), 'not even with a flush');

select * from finish();
rollback;
