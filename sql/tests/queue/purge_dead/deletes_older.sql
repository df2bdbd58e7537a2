-- purge_dead deletes dead letters older than the interval and returns how many.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}') as old \gset
select queue.enqueue('{}') as recent \gset
select queue.cancel(:old) \g /dev/null
select queue.cancel(:recent) \g /dev/null
update queue.dead_letters set died_at = now() - interval '8 days' where job_id = :old;
update queue.dead_letters set died_at = now() - interval '1 day' where job_id = :recent;

select is(queue.purge_dead(interval '7 days'), 1::bigint, 'one dead letter older than 7 days');
select results_eq($$ select job_id from queue.dead_letters $$, array[:recent::bigint],
    'the recent one stays');
select is(queue.purge_dead(interval '7 days'), 0::bigint, 'a second purge finds nothing');
select throws_ok($$ select queue.purge_dead(interval '-1 day') $$, '22023',
    'older_than must not be negative (got -1 days)', 'negative interval: 22023');
select throws_ok($$ select queue.purge_dead(null) $$, '22004', 'older_than must not be null',
    'null: 22004');

select * from finish();
rollback;
