-- A JSON number is at most 1000 characters of text wherever andal keeps JSON (payloads,
-- results, cached values): a few bytes of request must not become kilobytes for every reader.
-- The size check measures numbers without printing them, so its figures are exact for what
-- it printed and 'at least' for a value it refused on its numbers alone.
begin;
\ir ../_fixtures.psql
select plan(11);

select queue.configure_queue('n', payload_limit => 100000, keep_results => true) \g /dev/null
select lives_ok($$ select queue.enqueue('{"a": 1e999, "b": -1e-997}', queue => 'n') $$,
    'numbers of 1000 characters are accepted');
select andal_test.state() as before \gset
select throws_ok($$ select queue.enqueue('{"a": 1e1000}', queue => 'n') $$, '54000',
    'payload holds a number of 1001 characters of JSON text, over the limit of 1000',
    'a number of 1001 digits is refused');
select throws_ok($$ select queue.enqueue('{"a": 0e-16383}', queue => 'n', priority => 1) $$,
    '54000', 'payload holds a number of 16385 characters of JSON text, over the limit of 1000',
    'a zero with a long scale is refused (the general path)');
select throws_ok($$ select queue.enqueue_many(array['{}', '{"a": [1, 1e131071]}']::jsonb[],
        queue => 'n') $$, '54000',
    'payloads[2] holds a number of 131072 characters of JSON text, over the limit of 1000',
    'enqueue_many names the element');
-- 200 numbers of 1000 digits: 1.6 kB stored, 200 kB of text, refused on its numbers alone
select throws_ok(format($$ select queue.enqueue(%L, queue => 'n') $$,
        '{"a": [' || array_to_string(array_fill('1e999'::text, array[200]), ',') || ']}'),
    '54000', 'payload is at least 200000 bytes, over the queue''s limit of 100000 bytes',
    'refused on the text of its numbers, unprinted');
-- numbers are found at any depth jsonb accepts, past where one jsonpath walk would overflow
select throws_ok(format($$ select queue.enqueue(%L, queue => 'n') $$,
        repeat('{"a": [1, ', 2500) || '1e1000' || repeat(']}', 2500)),
    '54000', 'payload holds a number of 1001 characters of JSON text, over the limit of 1000',
    'a long number 2500 levels deep is refused');
select is(andal_test.state(), :'before', 'nothing was written');
select lives_ok(format($$ select queue.enqueue(%L, queue => 'n') $$,
        repeat('{"a": ', 10000) || '1' || repeat('}', 10000)),
    'a payload nested 10,000 levels deep is accepted');

select job_id as id, token from queue.claim(queues => array['n'], worker => 'w') \gset
select throws_ok(format($$ select queue.complete(%s, %L, '{"r": 1e1000}') $$, :id, :'token'),
    '54000', 'result holds a number of 1001 characters of JSON text, over the limit of 1000',
    'a kept result with a long number is refused');
select throws_ok($$ select cache.put('k', '1e1000') $$, '54000',
    'value holds a number of 1001 characters of JSON text, over the limit of 1000',
    'a cached value likewise');
select throws_ok($$ select queue.enqueue('{}', queue => 'n',
        trace_context => '{"traceparent": 1e131071}') $$, '22023',
    'trace_context values must be strings (a propagator''s carrier)',
    'a trace context is checked for strings before it is printed');

select * from finish();
rollback;
