-- configure_queue rejects out-of-range values with 22023 (null queue 22004) and writes
-- nothing.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.configure_queue('q') \g /dev/null
select andal_test.state() as before \gset

select throws_ok($$ select queue.configure_queue('q', max_attempts => 0) $$, '22023',
    'max_attempts must be at least 1 (got 0)', 'max_attempts 0');
select throws_ok($$ select queue.configure_queue('q', lease => interval '0') $$, '22023',
    'lease must be positive (got 00:00:00)', 'lease 0');
select throws_ok($$ select queue.configure_queue('q', backoff => 'random') $$, '22023',
    'backoff must be linear or exponential (got random)', 'unknown backoff');
select throws_ok($$ select queue.configure_queue('q', backoff_base => interval '-1 s') $$,
    '22023', 'backoff_base must not be negative (got -00:00:01)', 'negative backoff_base');
select throws_ok($$ select queue.configure_queue('q', jitter => 1.5) $$, '22023',
    'jitter must be between 0 and 1 (got 1.5)', 'jitter over 1');
select throws_ok($$ select queue.configure_queue('q', payload_limit => 0) $$, '22023',
    'payload_limit must be at least 1 byte (got 0)', 'payload_limit 0');
select throws_ok($$ select queue.configure_queue('q', cache_policy => 'keep') $$, '22023',
    'cache_policy must be invalidate, rewrite or none (got keep)', 'unknown cache_policy');
select throws_ok($$ select queue.configure_queue('') $$, '22023',
    'queue must be 1 to 128 characters long (got 0)', 'empty queue name');
select throws_ok($$ select queue.configure_queue(null) $$, '22004', 'queue must not be null',
    'null queue');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
