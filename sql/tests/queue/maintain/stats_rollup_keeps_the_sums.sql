-- The housekeeping schedule andal.stats_rollup merges per-session statistics rows of past
-- minutes into one row per minute: counts, run time and both histograms are summed, recent
-- minutes are left alone, and queue.stats() reports the same figures before and after.
begin;
\ir ../_fixtures.psql
select plan(6);
truncate queue.stat_minutes;

insert into queue.stat_minutes (minute, backend, queue, category, completed, retried, dead,
    run_count, run_ms, run_hist, wait_hist)
select date_trunc('minute', now()) - interval '20 minutes', b, 'q', '', b, 1, 0, b, b * 10,
    array_fill(b::bigint, array[16]), array_fill((b * 2)::bigint, array[16])
from generate_series(1, 3) as b
union all
select date_trunc('minute', now()), 7, 'q', '', 5, 0, 0, 5, 50,
    array_fill(1::bigint, array[16]), array_fill(1::bigint, array[16]);

-- a first maintain (the roll-up not due) takes the minute's WAL sample, which stats() reads
update queue.schedules set next_at = now() + interval '1 hour' where name = 'andal.stats_rollup';
select queue.maintain() \g /dev/null
create temporary table before as select * from queue.stats() where queue = 'q';
update queue.schedules set next_at = now() - interval '1 second'
where name = 'andal.stats_rollup';
select queue.maintain() \g /dev/null

select is((select count(*) from queue.stat_minutes
           where minute = date_trunc('minute', now()) - interval '20 minutes'), 1::bigint,
    'the old minute has one row');
select is((select array[completed, retried, run_count]::bigint[] from queue.stat_minutes
           where minute = date_trunc('minute', now()) - interval '20 minutes'),
    array[6, 3, 6]::bigint[], 'with the counts summed');
select is((select run_hist from queue.stat_minutes
           where minute = date_trunc('minute', now()) - interval '20 minutes'),
    array_fill(6::bigint, array[16]), 'and the histograms summed bucket by bucket');
select is((select backend from queue.stat_minutes
           where minute = date_trunc('minute', now()) - interval '20 minutes'), 0,
    'as backend 0');
select is((select count(*) from queue.stat_minutes where minute = date_trunc('minute', now())),
    1::bigint, 'the current minute is left alone');
select is((select row(s.*)::text from queue.stats() as s where queue = 'q'),
    (select row(b.*)::text from before as b), 'queue.stats() reports the same');

select * from finish();
rollback;
