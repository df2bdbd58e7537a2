-- The payload limit holds for the JSON text a claimer receives, not the stored size: a jsonb
-- number of a few bytes prints as up to 131,072 digits, so a payload of a few such numbers
-- is small on disk and huge on the wire. enqueue, enqueue_many and a cache_value are refused
-- with 54000 and write nothing.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.configure_queue('bomb', payload_limit => 10000) \g /dev/null
select andal_test.state() as before \gset

-- 3 numbers of 5,001 digits: under 100 bytes stored, over 15,000 bytes of text.
select ok(pg_column_size('{"a": [1e5000, 1e5000, 1e5000]}'::jsonb) < 100,
    'the bomb is small when stored');
select throws_ok($$ select queue.enqueue('{"a": [1e5000, 1e5000, 1e5000]}', queue => 'bomb') $$,
    '54000', null, 'enqueue: the printed size counts');
select throws_ok($$ select queue.enqueue_many(
        array['{"a": 1}', '{"a": [1e5000, 1e5000, 1e5000]}']::jsonb[], queue => 'bomb') $$,
    '54000', null, 'enqueue_many: the printed size counts');
update cache.config set max_value_bytes = 10000;
select throws_ok($$ select queue.enqueue('{}', queue => 'bomb', cache_key => 'k',
        cache_value => '[1e5000, 1e5000, 1e5000]') $$,
    '54000', null, 'cache_value: the printed size counts');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
