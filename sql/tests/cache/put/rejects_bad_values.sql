-- cache.put rejects bad input with the documented SQLSTATE and writes nothing: 22004 for a
-- null key or value, 22023 for an empty or over-long key, JSON null, a ttl <= 0, a negative
-- if_version; 54000 for a value over cache.config.max_value_bytes.
begin;
\ir ../_fixtures.psql
select plan(10);

select andal_cache_test.state() as before \gset
update cache.config set max_value_bytes = 100;

select throws_ok($$ select cache.put(null, '1') $$, '22004', 'key must not be null', 'null key');
select throws_ok($$ select cache.put('k', null) $$, '22004', 'value must not be null',
    'null value');
select throws_ok($$ select cache.put('', '1') $$, '22023',
    'key must be 1 to 512 characters long (got 0)', 'empty key');
select throws_ok(format('select cache.put(%L, %L)', repeat('k', 513), '1'), '22023',
    'key must be 1 to 512 characters long (got 513)', 'over-long key');
select throws_ok($$ select cache.put('k', 'null') $$, '22023', 'value must not be JSON null',
    'JSON null');
select throws_ok($$ select cache.put('k', '1', ttl => interval '0') $$, '22023',
    'ttl must be positive (got 00:00:00)', 'zero ttl');
select throws_ok($$ select cache.put('k', '1', ttl => interval '-1 second') $$, '22023',
    'ttl must be positive (got -00:00:01)', 'negative ttl');
select throws_ok($$ select cache.put('k', '1', if_version => -1) $$, '22023',
    'if_version must not be negative (got -1)', 'negative if_version');
select throws_ok(format('select cache.put(%L, to_jsonb(%L::text))', 'k', repeat('x', 200)),
    '54000', 'value is 202 bytes, over the cache''s limit of 100 bytes', 'too large');
select is(andal_cache_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
