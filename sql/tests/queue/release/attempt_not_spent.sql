-- release gives a claimed job back: pending again (after delay), the attempt not spent, the
-- lease and gate slot dropped.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', category => 'c') as j \gset
select token as t from queue.claim('w') \gset
select lives_ok(format('select queue.release(%s, %L)', :j, :'t'), 'release');
select is(
    (select row(status, attempt, token, worker, lease_expires_at, available_at)::text
     from queue.jobs where id = :j),
    row('pending', 0, null, null, null, now())::text,
    'pending, attempt back to 0, no lease, ready now');
select is((select count(*) from queue.worker_locks), 0::bigint, 'the gate slot is freed');
select throws_ok(format('select queue.release(%s, %L)', :j, :'t'), 'AN001', null,
    'the old token is dead after release: AN001');

select token as t from queue.claim('w') \gset
select queue.release(:j, :'t', delay => interval '30 seconds') \g /dev/null
select is((select available_at from queue.jobs where id = :j), now() + interval '30 seconds',
    'release with delay: available after the delay');
select is_empty($$ select * from queue.claim('w') $$, 'not claimable before');

select * from finish();
rollback;
