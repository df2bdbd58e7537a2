-- A reader without an epoch, or with an epoch that is no longer current (a crash emptied the
-- UNLOGGED cache), gets one 'flush' row: version = the current epoch, watermark = where to
-- resume.
begin;
\ir ../_fixtures.psql
select plan(6);

select * from cache.changes_since(0) \gset first_
select is(:'first_op'::text, 'flush', 'a new reader is told to flush');
select is(:first_version::bigint, (select epoch from cache.epoch), 'with the current epoch');
select ok(:first_watermark::bigint <= pg_current_xact_id()::text::bigint,
    'and a watermark no later than any running transaction');

select is((select op from cache.changes_since(:first_watermark, epoch => :first_version)),
    'watermark', 'with the right epoch and nothing new: one watermark row');

-- A crash empties cache.epoch (UNLOGGED); the next reader makes a new epoch.
delete from cache.epoch;
select is((select op from cache.changes_since(:first_watermark, epoch => :first_version)),
    'flush', 'after a crash the old epoch gets a flush');
select cmp_ok((select epoch from cache.epoch), '>', :first_version::bigint,
    'and a new epoch exists');

select * from finish();
rollback;
