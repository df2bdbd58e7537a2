-- cache.put measures the JSON text a reader receives, not the stored size: a value of a few
-- huge numbers (a few bytes each in jsonb, thousands of digits printed) is refused with 54000.
begin;
\ir ../_fixtures.psql
select plan(3);

update cache.config set max_value_bytes = 10000;
select andal_cache_test.state() as before \gset
select throws_ok($$ select cache.put('k', '[1e5000, 1e5000, 1e5000]') $$, '54000',
    'value holds a number of 5001 characters of JSON text, over the limit of 1000',
    'a number bomb is refused');
select lives_ok($$ select cache.put('k', '[1e999, 1e999, 1e999]') $$,
    'a value whose text is under the limit is accepted');
update cache.config set max_value_bytes = 1048576;
select is((select length(c.value::text) from cache.entries as c where c.key = 'k'), 3006,
    'stored verbatim');

select * from finish();
rollback;
