-- list_dead returns the newest dead letters first, optionally of one queue, at most lim.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{"n": 1}', queue => 'a') as a1 \gset
select queue.enqueue('{"n": 2}', queue => 'b') as b1 \gset
select queue.enqueue('{"n": 3}', queue => 'a') as a2 \gset
select queue.cancel(:a1), queue.cancel(:b1), queue.cancel(:a2) \g /dev/null
update queue.dead_letters set died_at = now() - make_interval(mins => job_id::int);

select results_eq($$ select job_id from queue.list_dead() $$,
    array[:a1::bigint, :b1::bigint, :a2::bigint] ,
    'newest first');
select results_eq($$ select job_id from queue.list_dead(queue => 'a') $$,
    array[:a1::bigint, :a2::bigint], 'one queue');
select results_eq($$ select job_id from queue.list_dead(lim => 1) $$, array[:a1::bigint],
    'at most lim');
select throws_ok($$ select * from queue.list_dead(lim => 0) $$, '22023',
    'lim must be at least 1 (got 0)', 'lim 0: 22023');

select * from finish();
rollback;
