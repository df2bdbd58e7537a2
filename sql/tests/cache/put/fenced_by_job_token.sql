-- A cache write on behalf of a job (cache.put / cache.invalidate with job_id and token) is
-- fenced like the job's own calls: once the job's lease was taken over, the stale worker's
-- writes are refused with AN001 and change nothing (no new version a reader asking for a
-- minimum version would take); the current token's writes are accepted.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{}', queue => 'fence') as job \gset
select token as a_token from queue.claim(worker => 'A', queues => '{fence}') \gset
select ok(cache.put(key => 'k', value => '"a1"', job_id => :job, token => :'a_token') > 0,
    'a write under the current token is accepted');
select ok(cache.invalidate(key => 'k', job_id => :job, token => :'a_token') > 0,
    'an invalidation under the current token is accepted');

-- A's lease lapses and B takes the job over
update queue.jobs set lease_expires_at = now() - interval '1 second' where id = :job;
select throws_ok(format('select cache.put(key => %L, value => %L, job_id => %s, token => %L)',
    'k', '"late"', :job, :'a_token'), 'AN001', null, 'an expired lease: put refused');
select token as b_token from queue.claim(worker => 'B', queues => '{fence}') \gset
select cache._current_version('k') as v_before \gset
select andal_cache_test.state() as before \gset

select throws_ok(format('select cache.put(key => %L, value => %L, job_id => %s, token => %L)',
    'k', '"stale"', :job, :'a_token'), 'AN001', null, 'a stale token: put refused');
select throws_ok(format('select cache.invalidate(key => %L, job_id => %s, token => %L)',
    'k', :job, :'a_token'), 'AN001', null, 'a stale token: invalidate refused');
select throws_ok(format('select cache.put(key => %L, value => %L, job_id => %s, token => %L)',
    'k', '"x"', 999999999, :'a_token'), 'AN001', null, 'an unknown job: refused');
select is(andal_cache_test.state(), :'before', 'the stale writes changed nothing');
select is(cache._current_version('k'), :v_before::bigint, 'no new version');

select ok(cache.put(key => 'k', value => '"b1"', job_id => :job, token => :'b_token')
    > :v_before::bigint, 'the current token writes');

select * from finish();
rollback;
