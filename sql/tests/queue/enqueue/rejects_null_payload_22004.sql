-- A null payload (or other required argument) is 22004 and writes nothing.
begin;
\ir ../_fixtures.psql
select plan(5);

select andal_test.state() as before \gset

select throws_ok($$ select queue.enqueue(null) $$, '22004', 'payload must not be null',
    'null payload: 22004 naming payload');
select throws_ok($$ select queue.enqueue('{}', queue => null) $$, '22004',
    'queue must not be null', 'null queue: 22004 naming queue');
select throws_ok($$ select queue.enqueue('{}', delay => null) $$, '22004',
    'delay must not be null', 'null delay: 22004 naming delay');
select throws_ok($$ select queue.enqueue('{}', priority => null) $$, '22004',
    'priority must not be null', 'null priority: 22004 naming priority');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
