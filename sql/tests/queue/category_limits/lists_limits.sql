-- category_limits lists each known category with its limit, the default 1 included.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.enqueue('{}', category => 'b') \g /dev/null
select queue.set_category_limit(category => 'a', max_running => 3);
select queue.set_category_limit(category => 'z', max_running => 0);

select results_eq(
    $$ select category, max_running from queue.category_limits() $$,
    $$ values ('a', 3), ('b', 1), ('z', 0) $$,
    'every category with its limit, by name');
select is((select count(*) from queue.category_limits() where category is null), 0::bigint,
    'no row for jobs without a category');

select * from finish();
rollback;
