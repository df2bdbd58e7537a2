-- release with a stale, wrong or expired token raises AN001 and changes nothing.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}') as j \gset
select token as t1 from queue.claim('w1') \gset
select andal_test.expire(:j) \g /dev/null
select token as t2 from queue.claim('w2') \gset
select andal_test.state() as before \gset

select throws_ok(format('select queue.release(%s, %L)', :j, :'t1'), 'AN001',
    format('lease lost on job %s', :j), 'stale token: AN001');
select throws_ok(format('select queue.release(%s, %L)', :j, gen_random_uuid()), 'AN001', null,
    'wrong token: AN001');
select is(andal_test.state(), :'before', 'nothing changed');
select andal_test.expire(:j) \g /dev/null
select andal_test.state() as expired \gset
select throws_ok(format('select queue.release(%s, %L)', :j, :'t2'), 'AN001', null,
    'current token after its lease expired: AN001');
select is(andal_test.state(), :'expired', 'nothing changed');
select throws_ok(format('select queue.release(%s, %L, delay => %L)', :j, :'t2', '-1 s'),
    '22023', 'delay must not be negative (got -00:00:01)', 'negative delay: 22023');

select * from finish();
rollback;
