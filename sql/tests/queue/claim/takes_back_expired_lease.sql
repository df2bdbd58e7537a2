-- A running job whose lease expired is taken back by the next claim: a new worker gets it
-- with attempt + 1 and a new token, and the lapse is recorded in the error history.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}') as j \gset
select token as t1 from queue.claim('w1') \gset
select is_empty($$ select * from queue.claim('w2') $$, 'a live lease is not taken back');

select andal_test.expire(:j) \g /dev/null
select job_id as j2, attempt as a2, token as t2 from queue.claim('w2') \gset
select is(:j2::bigint, :j::bigint, 'the expired job is claimed again');
select is(:a2, 2, 'with attempt + 1');
select isnt(:'t2'::uuid, :'t1'::uuid, 'and a new token');
select is((select worker from queue.jobs where id = :j), 'w2', 'by the new worker');
select is(
    (select errors -> 0 ->> 'error' from queue.jobs where id = :j),
    'lease expired (worker w1)', 'the error history records the lapse');

select * from finish();
rollback;
