-- changes_since returns the writes and invalidations from the reader's watermark in (xid, seq)
-- order, each with a watermark to resume from that never passes a running transaction (here:
-- this test's own), so resuming from it re-delivers rather than skips.
begin;
\ir ../_fixtures.psql
select plan(5);

select andal_cache_test.epoch() as epoch \gset
select c.watermark as w0 from cache.changes_since(0) as c \gset
select cache.put('a', '1') as va \gset
select cache.invalidate('b') as vb \gset

select results_eq(
    format('select seq, key, version, op from cache.changes_since(%s, %s)', :w0, :epoch),
    format('values (%s::bigint, %L::text, %s::bigint, %L::text), (%s, %L, %s, %L)',
        :va, 'a', :va, 'put', :vb, 'b', :vb, 'invalidate'),
    'both changes, in order');
select ok((select bool_and(watermark >= :w0) from cache.changes_since(:w0, :epoch)),
    'watermarks never go below the reader''s');
select ok((select bool_and(watermark <= pg_current_xact_id()::text::bigint)
           from cache.changes_since(:w0, :epoch)),
    'nor past this still-running writer');
select ok((select bool_and(xid = pg_current_xact_id()::text::bigint)
           from cache.changes_since(:w0, :epoch)),
    'each row names its writer''s transaction');
select c.watermark as w1 from cache.changes_since(:w0, :epoch) as c order by c.seq desc limit 1 \gset
select is((select count(*) from cache.changes_since(:w1, :epoch) where op <> 'watermark'),
    2::bigint, 'resuming re-delivers the uncommitted writer''s rows');

select * from finish();
rollback;
