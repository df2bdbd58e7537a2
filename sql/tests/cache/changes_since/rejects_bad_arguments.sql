-- changes_since: 22023 for a negative watermark or after_xid and for lim outside 1..100000.
begin;
\ir ../_fixtures.psql
select plan(4);

select throws_ok($$ select * from cache.changes_since(-1) $$, '22023',
    'watermark must not be negative (got -1)', 'negative watermark');
select throws_ok($$ select * from cache.changes_since(0, lim => 0) $$, '22023',
    'lim must be between 1 and 100000 (got 0)', 'lim 0');
select throws_ok($$ select * from cache.changes_since(0, lim => 100001) $$, '22023',
    'lim must be between 1 and 100000 (got 100001)', 'lim too large');
select throws_ok($$ select * from cache.changes_since(0, after_xid => -5) $$, '22023',
    'after_xid must not be negative (got -5)', 'negative after_xid');

select * from finish();
rollback;
