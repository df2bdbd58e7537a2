-- complete with a stale, wrong or expired token raises AN001 (lease lost) and changes
-- nothing; a completed job cannot be completed again.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{}', category => 'c') as j \gset
select token as t1 from queue.claim('w1') \gset
select andal_test.expire(:j) \g /dev/null
select token as t2 from queue.claim('w2') \gset
select andal_test.state() as before \gset

select throws_ok(format('select queue.complete(%s, %L)', :j, :'t1'), 'AN001',
    format('lease lost on job %s', :j), 'stale token (job claimed again): AN001');
select throws_ok(format('select queue.complete(%s, %L)', :j, gen_random_uuid()), 'AN001',
    null, 'wrong token: AN001');
select throws_ok(format('select queue.complete(%s, %L)', :j + 1000, :'t2'), 'AN001',
    null, 'unknown job: AN001 (the lease is lost either way)');
select is(andal_test.state(), :'before', 'nothing changed');

select andal_test.expire(:j) \g /dev/null
select andal_test.state() as before \gset
select throws_ok(format('select queue.complete(%s, %L)', :j, :'t2'), 'AN001', null,
    'the current token after its lease expired: AN001');
select is(andal_test.state(), :'before', 'nothing changed');

update queue.jobs set lease_expires_at = now() + interval '1 minute' where id = :j;
select lives_ok(format('select queue.complete(%s, %L)', :j, :'t2'),
    'the current token with a live lease completes');
select throws_ok(format('select queue.complete(%s, %L)', :j, :'t2'), 'AN001', null,
    'completing twice: AN001');
select throws_ok(format('select queue.complete(%s, null)', :j), '22004', null,
    'a null token: 22004');

select * from finish();
rollback;
