-- stats_by_minute refuses a null, non-positive or over-long span.
begin;
\ir ../_fixtures.psql
select plan(3);

select throws_ok($$ select * from queue.stats_by_minute(span => null) $$, '22004',
    'span must not be null', 'null: 22004');
select throws_ok($$ select * from queue.stats_by_minute(span => interval '0') $$, '22023',
    'span must be positive (got 00:00:00)', 'zero: 22023');
select throws_ok($$ select * from queue.stats_by_minute(span => interval '2 days') $$, '22023',
    'span must be at most 1 day (got 2 days)', 'two days: 22023');

select * from finish();
rollback;
