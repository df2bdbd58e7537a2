-- stats_by_minute: one row per queue and minute of the span, zeros included, with the ended
-- attempts of each minute summed over backends and categories.
begin;
\ir ../_fixtures.psql
select plan(6);

truncate queue.stat_minutes;
insert into queue.stat_minutes (minute, backend, queue, category, completed, retried, dead,
    run_hist, wait_hist)
values
    (date_trunc('minute', now()), 1, 'mail', '', 3, 1, 0, '{}', '{}'),
    (date_trunc('minute', now()), 2, 'mail', 'x', 2, 0, 1, '{}', '{}'),
    (date_trunc('minute', now()) - interval '5 minutes', 1, 'mail', '', 7, 0, 0, '{}', '{}'),
    (date_trunc('minute', now()) - interval '2 hours', 1, 'old', '', 9, 0, 0, '{}', '{}');

select is((select count(*) from queue.stats_by_minute(span => interval '1 hour')), 60::bigint,
    'one queue with an attempt in the hour: 60 minutes');
select results_eq(
    $$ select completed, retried, dead from queue.stats_by_minute(span => interval '1 hour')
       where minute = date_trunc('minute', now()) $$,
    $$ values (5::bigint, 1::bigint, 1::bigint) $$,
    'the current minute sums backends and categories');
select results_eq(
    $$ select failure_rate from queue.stats_by_minute(span => interval '1 hour')
       where minute in (date_trunc('minute', now()), date_trunc('minute', now()) - interval '1 minute')
       order by minute $$,
    $$ values (null::double precision), (2.0 / 7) $$,
    'failure rate: (retried + dead) / ended, null in a minute without any');
select is((select sum(completed) from queue.stats_by_minute(span => interval '1 hour')),
    12::numeric, 'older minutes count, a minute outside the span does not');
select is((select count(*) from queue.stats_by_minute(span => interval '1 hour')
           where queue = 'old'), 0::bigint, 'a queue idle in the span has no rows');
select is((select count(*) from queue.stats_by_minute(span => interval '3 hours')
           where queue = 'old'), 180::bigint, 'a longer span reaches it');

select * from finish();
rollback;
