-- A payload over the queue's limit (default 1 MiB, configurable) is 54000 and writes nothing;
-- a payload at the limit is accepted.
begin;
\ir ../_fixtures.psql
select plan(5);

select andal_test.state() as before \gset

select throws_ok(
    format('select queue.enqueue(%L::jsonb)', jsonb_build_object('x', repeat('a', 1048576))),
    '54000', null, 'over 1 MiB by default: 54000');
select is(andal_test.state(), :'before', 'nothing was written');

select queue.configure_queue('small', payload_limit => 20) \g /dev/null
select andal_test.state() as before \gset
-- '{"x": "aaaaaaaaaaa"}' is exactly 20 bytes of JSON text.
select lives_ok($$ select queue.enqueue('{"x": "aaaaaaaaaaa"}', queue => 'small') $$,
    'a payload at the limit is accepted');
select throws_ok($$ select queue.enqueue('{"x": "aaaaaaaaaaaa"}', queue => 'small') $$,
    '54000', 'payload is 21 bytes, over the queue''s limit of 20 bytes',
    'one byte over a configured limit: 54000 naming payload');
select is((select count(*) from queue.jobs where queue = 'small'), 1::bigint,
    'only the accepted job was written');

select * from finish();
rollback;
