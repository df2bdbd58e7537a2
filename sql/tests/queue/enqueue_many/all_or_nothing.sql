-- One bad element rejects the whole call with its SQLSTATE and writes nothing.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.configure_queue('small', payload_limit => 100) \g /dev/null
select andal_test.state() as before \gset

select throws_ok($$ select queue.enqueue_many(array['{}', '[1]', '{}']::jsonb[]) $$, '22023',
    'payloads[2] must be a JSON object, not array',
    'a non-object element: 22023 naming the element');
select throws_ok($$ select queue.enqueue_many(array['{}', null]::jsonb[]) $$, '22004',
    'payloads[2] must not be null', 'a null element: 22004 naming the element');
select throws_ok($$ select queue.enqueue_many(null) $$, '22004',
    'payloads must not be null', 'a null array: 22004');
select throws_ok(
    format('select queue.enqueue_many(array[%L, %L]::jsonb[], queue => %L)',
        '{}', jsonb_build_object('x', repeat('a', 200)), 'small'),
    '54000', null, 'an element over the queue''s payload limit: 54000');
select throws_ok(
    $$ select queue.enqueue_many(array['{}', '{}']::jsonb[], dedup_keys => array['a']) $$,
    '22023', 'dedup_keys must have one element per payload (2 payloads, 1 keys)',
    'dedup_keys of another length: 22023');
select throws_ok($$ select queue.enqueue_many(array['{}']::jsonb[], max_attempts => 0) $$,
    '22023', 'max_attempts must be at least 1 (got 0)', 'max_attempts 0: 22023');
select is(andal_test.state(), :'before', 'nothing was written by any rejected call');

select * from finish();
rollback;
