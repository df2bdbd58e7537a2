-- fail rejects a null error (22004) and a negative retry_in (22023) before touching the job.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{}') as j \gset
select token as t from queue.claim('w') \gset
select andal_test.state() as before \gset

select throws_ok(format('select queue.fail(%s, %L, null)', :j, :'t'), '22004',
    'error must not be null', 'null error: 22004');
select throws_ok(format('select queue.fail(%s, %L, %L, retry_in => %L)', :j, :'t', 'e', '-1 s'),
    '22023', 'retry_in must not be negative (got -00:00:01)', 'negative retry_in: 22023');
select throws_ok(format('select queue.fail(%s, %L, %L, retryable => null)', :j, :'t', 'e'),
    '22004', 'retryable must not be null', 'null retryable: 22004');
select is(andal_test.state(), :'before', 'nothing changed');

select * from finish();
rollback;
