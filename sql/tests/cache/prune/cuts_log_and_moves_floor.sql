-- cache.prune deletes log rows older than log_keep whose transactions ended, records the cut
-- (readers at or below it are told to flush), and deletes entries stale for longer than
-- entries_keep; fresh entries stay.
begin;
\ir ../_fixtures.psql
select plan(5);

-- Old rows of long-ended transactions (xids 3..5), and one of this transaction.
insert into cache.log (seq, xid, key, op, at)
values (1, '3', 'a', 'put', now() - interval '2 hours'),
       (2, '5', 'b', 'invalidate', now() - interval '2 hours');
select cache.put('fresh', '1') \g /dev/null
select cache.put('old', '1') \g /dev/null
select cache.invalidate('old') \g /dev/null
update cache.entries set written_at = now() - interval '2 days',
    invalidated_at = now() - interval '2 days'
where key = 'old';

select * from cache.prune(log_keep => '1 hour') \gset p_
select is(:p_log_rows::bigint, 2::bigint, 'the two old log rows go');
select is((select count(*) from cache.log), 3::bigint, 'this transaction''s rows stay');
select is((select pruned_xid from cache.log_state), '5'::xid8, 'the cut is recorded');
select is(:p_entries::bigint, 1::bigint, 'the long-stale entry goes');
select is((select count(*) from cache.entries where key = 'fresh'), 1::bigint,
    'fresh entries stay');

select * from finish();
rollback;
