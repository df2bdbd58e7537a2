-- set_category_limit creates or updates a category's limit; bad input is rejected and writes
-- nothing.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.set_category_limit('c', 4) \g /dev/null
select is((select max_running from queue.categories where category = 'c'), 4, 'created');
select queue.set_category_limit('c', 2) \g /dev/null
select is((select max_running from queue.categories where category = 'c'), 2, 'updated');
select is((select count(*) from queue.categories), 1::bigint, 'one row per category');

select andal_test.state() as before \gset
select throws_ok($$ select queue.set_category_limit('c', -1) $$, '22023',
    'max_running must be 0 or more (got -1)', 'negative limit: 22023');
select throws_ok($$ select queue.set_category_limit('', 1) $$, '22023',
    'category must be 1 to 128 characters long (got 0)', 'empty name: 22023');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
