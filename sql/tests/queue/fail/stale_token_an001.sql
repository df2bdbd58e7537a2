-- fail with a stale, wrong or expired token raises AN001 and changes nothing (no attempt
-- spent, no error recorded, no dead letter).
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', max_attempts => 2) as j \gset
select token as t1 from queue.claim('w1') \gset
select andal_test.expire(:j) \g /dev/null
select token as t2 from queue.claim('w2') \gset
select andal_test.state() as before \gset

select throws_ok(format('select queue.fail(%s, %L, %L)', :j, :'t1', 'late'), 'AN001',
    format('lease lost on job %s', :j), 'stale token: AN001');
select throws_ok(
    format('select queue.fail(%s, %L, %L, retryable => false)', :j, gen_random_uuid(), 'x'),
    'AN001', null, 'wrong token, non-retryable: AN001');
select is(andal_test.state(), :'before', 'nothing changed');

select andal_test.expire(:j) \g /dev/null
select andal_test.state() as before \gset
select throws_ok(format('select queue.fail(%s, %L, %L)', :j, :'t2', 'late'), 'AN001', null,
    'current token after its lease expired: AN001');
select is(andal_test.state(), :'before', 'nothing changed, not even on the last attempt');
select is((select count(*) from queue.dead_letters), 0::bigint, 'no dead letter');

select * from finish();
rollback;
