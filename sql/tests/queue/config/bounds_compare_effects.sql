-- Every interval argument is checked by its effect (now() + value against now() and the
-- configured bound in queue.config), so no value that later breaks claim or fail, lands in
-- the past or parks a job for ever is accepted: 22023, nothing written. Priority is bounded
-- too. The bounds are configurable.
begin;
\ir ../_fixtures.psql
select plan(22);

select andal_test.state() as before \gset

-- lengths that once broke claim and fail with 22008 (timestamp out of range)
select throws_ok($$ select queue.configure_queue('q', lease => '300000 years') $$, '22023',
    'lease must be at most 1 day (got 300000 years)', 'a lease past the bound');
select throws_ok($$ select queue.configure_queue('q', backoff_base => '300000 years') $$,
    '22023', null, 'a backoff base past the bound');
select throws_ok($$ select queue.configure_queue('q', backoff_cap => '300000 years') $$,
    '22023', null, 'a backoff cap past the bound');
-- equal to a positive interval, already expired as an effect
select throws_ok($$ select queue.configure_queue('q', lease => '-100 years 36001 days') $$,
    '22023', 'lease must be positive (got -100 years +36001 days)', 'an expired lease');
select throws_ok($$ select queue.claim(worker => 'w', lease => '-100 years 36001 days') $$,
    '22023', null, 'claim: an expired lease');
select throws_ok($$ select queue.claim(worker => 'w', lease => '2 days') $$, '22023',
    'lease must be at most 1 day (got 2 days)', 'claim: a lease past the bound');
-- equal to 0 as an interval, 1.4 years in the past as a time
select throws_ok($$ select queue.enqueue('{}', delay => '-100 years 36000 days') $$, '22023',
    'delay must not be negative (got -100 years +36000 days)', 'enqueue: a delay in the past');
select throws_ok($$ select queue.enqueue_many(array['{}'::jsonb], delay => '-100 years 36000 days') $$,
    '22023', null, 'enqueue_many: a delay in the past');
select throws_ok($$ select queue.enqueue('{}', delay => '2 years') $$, '22023',
    'delay must be at most 1 year (got 2 years)', 'enqueue: a delay past the bound');
select throws_ok($$ select queue.enqueue('{}', delay => '300000 years') $$, '22023', null,
    'enqueue: a delay past the timestamp range');
select throws_ok($$ select queue.enqueue('{}', priority => 2147483647) $$, '22023',
    'priority must be between -1000000 and 1000000 (got 2147483647)', 'a priority past the bound');
select throws_ok($$ select queue.purge_dead(older_than => '-100 years 36000 days') $$, '22023',
    null, 'purge_dead: an age in the past');
select throws_ok($$ select queue.purge_dead(older_than => '300000 years') $$, '22023',
    null, 'purge_dead: an age past the timestamp range');
select throws_ok($$ select cache.put('k', '1', ttl => '-100 years 36001 days') $$, '22023',
    'ttl must be positive (got -100 years +36001 days)', 'cache.put: an expired ttl');
select is(andal_test.state(), :'before', 'nothing was written');

-- a claimed job: extension, retry and release delay are bounded the same way
select queue.enqueue('{}', queue => 'b') as job \gset
select job_id, token from queue.claim(worker => 'w', queues => '{b}') \gset
select throws_ok(format('select queue.heartbeat(%s, %L, extend => %L)', :job, :'token',
    '-100 years 36001 days'), '22023', null, 'heartbeat: an expired extension');
select throws_ok(format('select queue.heartbeat(%s, %L, extend => %L)', :job, :'token',
    '1000 years'), '22023', null, 'heartbeat: an extension past the bound');
select throws_ok(format('select queue.fail(%s, %L, %L, retry_in => %L)', :job, :'token', 'e',
    '-100 years 36000 days'), '22023', null, 'fail: a retry in the past');
select throws_ok(format('select queue.release(%s, %L, delay => %L)', :job, :'token',
    '300000 years'), '22023', null, 'release: a delay past the timestamp range');

-- the largest allowed backoff never overflows: fail reschedules within the cap
select queue.configure_queue('b', backoff => 'exponential', backoff_base => '1 year',
    backoff_cap => '1 year', max_attempts => 100) \g /dev/null
select is(queue.fail(:job, :'token', 'e'), 'pending', 'fail with the largest backoff');

-- the bounds are configurable
update queue.config set max_lease = '1 hour', max_priority = 10;
select throws_ok($$ select queue.claim(worker => 'w', lease => '2 hours') $$, '22023',
    'lease must be at most 01:00:00 (got 02:00:00)', 'a lowered max_lease holds');
select throws_ok($$ select queue.enqueue('{}', priority => 11) $$, '22023',
    'priority must be between -1000000 and 10 (got 11)', 'a lowered max_priority holds');

select * from finish();
rollback;
