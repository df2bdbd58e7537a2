-- A reader whose watermark is at or below the log's pruned point may have missed a pruned
-- change: it is told to flush, never given a partial answer.
begin;
\ir ../_fixtures.psql
select plan(2);

select andal_cache_test.epoch() as epoch \gset
select c.watermark as w0 from cache.changes_since(0) as c \gset
select isnt((select op from cache.changes_since(:w0, :epoch) limit 1), 'flush',
    'before pruning: no flush');
update cache.log_state set pruned_xid = (:w0)::text::xid8;
select is((select op from cache.changes_since(:w0, :epoch)), 'flush', 'after: flush');

select * from finish();
rollback;
