-- With lim, changes_since answers one page; after_xid/after_seq (the last row's xid and seq)
-- continue the sweep without skipping or repeating a row.
begin;
\ir ../_fixtures.psql
select plan(4);

select andal_cache_test.epoch() as epoch \gset
select c.watermark as w0 from cache.changes_since(0) as c \gset
select cache.put('k' || g, to_jsonb(g)) from generate_series(1, 5) as g \g /dev/null

create temp table seen as
select * from cache.changes_since(:w0, :epoch, lim => 2);
select is((select count(*) from seen), 2::bigint, 'first page: lim rows');
select max(xid) as ax, max(seq) as aseq from seen \gset
insert into seen select * from cache.changes_since(:w0, :epoch, lim => 2, after_xid => :ax,
    after_seq => :aseq);
select max(xid) as ax, max(seq) as aseq from seen \gset
insert into seen select * from cache.changes_since(:w0, :epoch, lim => 2, after_xid => :ax,
    after_seq => :aseq);
select is((select count(*) from seen where op = 'put'), 5::bigint, 'three pages: every row');
select is((select count(distinct seq) from seen where op = 'put'), 5::bigint, 'none twice');
select is((select op from cache.changes_since(:w0, :epoch, lim => 2,
        after_xid => (select max(xid) from seen), after_seq => (select max(seq) from seen))),
    'watermark', 'past the end: a watermark row');

select * from finish();
rollback;
