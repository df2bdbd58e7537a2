-- claim hands out the highest priority first, then the earliest available_at, then the lowest
-- id; a batch comes back in that order.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{"name": "a"}', priority => 0) as a \gset
select queue.enqueue('{"name": "b"}', priority => 5) as b \gset
select queue.enqueue('{"name": "c"}', priority => 0) as c \gset
select queue.enqueue('{"name": "d"}', priority => 5) as d \gset
select queue.enqueue('{"name": "e"}', priority => -1) as e \gset
select queue.enqueue('{"name": "f"}', priority => 0) as f \gset
update queue.jobs set available_at = now() - interval '3 minutes' where id = :a;
update queue.jobs set available_at = now() - interval '1 minute' where id = :b;
update queue.jobs set available_at = now() - interval '5 minutes' where id = :c;
update queue.jobs set available_at = now() - interval '2 minutes' where id = :d;
update queue.jobs set available_at = now() - interval '9 minutes' where id = :e;
update queue.jobs set available_at = now() - interval '3 minutes' where id = :f;

-- Expected: d, b (priority 5, older first), c, a, f (priority 0; a and f tie on time: id),
-- e (priority -1, although it is the oldest).
select is((select job_id from queue.claim('w1')), :d::bigint, 'batch 1 takes the best job');
select results_eq(
    $$ select payload ->> 'name' from queue.claim('w2', batch => 3) $$,
    array['b', 'c', 'a'], 'a batch returns the next jobs in claim order');
select results_eq(
    $$ select payload ->> 'name' from queue.claim('w3', batch => 10) $$,
    array['f', 'e'], 'then the rest: ties on time by id, lower priority last');

select * from finish();
rollback;
