-- Bad input, 22023 at enqueue: a non-object payload, a negative delay, max_attempts < 1, empty
-- or over-long names. Each message names the argument; nothing is written.
begin;
\ir ../_fixtures.psql
select plan(12);

select andal_test.state() as before \gset

select throws_ok($$ select queue.enqueue('[1, 2]') $$, '22023',
    'payload must be a JSON object, not array', 'array payload');
select throws_ok($$ select queue.enqueue('"text"') $$, '22023',
    'payload must be a JSON object, not string', 'string payload');
select throws_ok($$ select queue.enqueue('null') $$, '22023',
    'payload must be a JSON object, not null', 'JSON null payload');
select throws_ok($$ select queue.enqueue('{}', delay => interval '-1 second') $$, '22023',
    'delay must not be negative (got -00:00:01)', 'negative delay');
select throws_ok($$ select queue.enqueue('{}', max_attempts => 0) $$, '22023',
    'max_attempts must be at least 1 (got 0)', 'max_attempts 0');
select throws_ok($$ select queue.enqueue('{}', max_attempts => -3) $$, '22023',
    'max_attempts must be at least 1 (got -3)', 'negative max_attempts');
select throws_ok($$ select queue.enqueue('{}', queue => '') $$, '22023',
    'queue must be 1 to 128 characters long (got 0)', 'empty queue name');
select throws_ok(format('select queue.enqueue(%L, queue => %L)', '{}', repeat('q', 129)),
    '22023', 'queue must be 1 to 128 characters long (got 129)', 'over-long queue name');
select throws_ok($$ select queue.enqueue('{}', category => '') $$, '22023',
    'category must be 1 to 128 characters long (got 0)', 'empty category');
select throws_ok(format('select queue.enqueue(%L, category => %L)', '{}', repeat('c', 129)),
    '22023', 'category must be 1 to 128 characters long (got 129)', 'over-long category');
select throws_ok($$ select queue.enqueue('{}', dedup_key => '') $$, '22023',
    'dedup_key must be 1 to 512 characters long (got 0)', 'empty dedup_key');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
