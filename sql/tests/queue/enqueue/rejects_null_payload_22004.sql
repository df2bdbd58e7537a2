-- A null payload (or other required argument) is 22004 and writes nothing. (A null optional
-- argument, such as delay or priority, means its default: null_means_the_default.sql.)
begin;
\ir ../_fixtures.psql
select plan(3);

select andal_test.state() as before \gset

select throws_ok($$ select queue.enqueue(null) $$, '22004', 'payload must not be null',
    'null payload: 22004 naming payload');
select throws_ok($$ select queue.enqueue('{}', queue => null) $$, '22004',
    'queue must not be null', 'null queue: 22004 naming queue');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
