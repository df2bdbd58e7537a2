-- A trace_context that is not a JSON object of strings, or over 4096 bytes, is 22023 and
-- writes nothing; queue.trace_contexts refuses null (22004), a nested array and more than
-- 1000 ids (22023).
begin;
\ir ../_fixtures.psql
select plan(8);

select andal_test.state() as before \gset

select throws_ok($$ select queue.enqueue('{}', trace_context => '[]') $$, '22023',
    'trace_context must be a JSON object, not array', 'an array');
select throws_ok($$ select queue.enqueue('{}', trace_context => '{"traceparent": 1}') $$,
    '22023', null, 'a value that is not a string');
select throws_ok(
    $$ select queue.enqueue('{}', trace_context => jsonb_build_object('t', repeat('x', 4097))) $$,
    '22023', null, 'over 4096 bytes');
select throws_ok($$ select queue.enqueue(null, trace_context => '{}') $$, '22004', null,
    'a null payload, as the other forms');
select throws_ok($$ select * from queue.trace_contexts(null) $$, '22004', null, 'null ids');
select throws_ok($$ select * from queue.trace_contexts(array[[1, 2]]::bigint[]) $$, '22023',
    null, 'a nested array');
select throws_ok(
    $$ select * from queue.trace_contexts(array(select generate_series(1, 1001))::bigint[]) $$,
    '22023', null, 'more than 1000 ids');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
