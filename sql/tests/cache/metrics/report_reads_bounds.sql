-- cache.report_reads bounds what one call may write: at most 1000 job types, counters that
-- are whole numbers of the bigint range (a jsonb number may have 131,072 digits; those gave
-- an undocumented 22003 or 22P02). 22023, nothing written.
begin;
\ir ../_fixtures.psql
select plan(5);

select count(*) as before from cache.read_stats \gset
select throws_ok($$ select cache.report_reads('p', (select jsonb_object_agg('t' || g, '{"miss": 1}'::jsonb)
        from generate_series(1, 1001) as g)) $$, '22023',
    'counts must hold at most 1000 job types', 'too many job types');
select throws_ok($$ select cache.report_reads('p', '{"t": {"miss": 1e100}}') $$, '22023', null,
    'a counter past the bigint range');
select throws_ok($$ select cache.report_reads('p', '{"t": {"miss": 1.5}}') $$, '22023', null,
    'a fractional counter');
select is((select count(*) from cache.read_stats), :before::bigint, 'nothing was written');
select is(cache.report_reads('p', (select jsonb_object_agg('t' || g, '{"miss": 1}'::jsonb)
        from generate_series(1, 1000) as g)), 1000, '1000 job types are accepted');

select * from finish();
rollback;
