-- queue.cancel of a running job records an abort request and tells its worker (channel
-- andal_abort); heartbeats report it and no longer extend the lease; the worker's complete
-- is fenced (AN001, nothing changed); its fail ends the job cancelled, never retried, with
-- the attempt in its history; a later complete by it gets AN001.
begin;
\ir ../_fixtures.psql
select plan(17);

select queue.enqueue('{}', queue => 'q', category => 'c') as j \gset
select token as t, lease_expires_at as lease from queue.claim('w1', queues => '{q}') \gset

listen andal_abort;
select lives_ok(format('select queue.cancel(%s)', :j), 'cancel of a running job is accepted');
select isnt((select abort_requested_at from queue.job(:j)), null,
    'queue.job shows the abort request');
select is((select state from queue.job(:j)), 'running', 'the job still runs');
select lives_ok(format('select queue.cancel(%s)', :j), 'asking again is harmless');

select is((select h.abort_requested from queue.heartbeat(job_id => :j, token => :'t',
    report_abort => true, extend => '10 minutes') as h), true, 'heartbeat reports the abort');
select is((select h.lease_expires_at from queue.heartbeat(job_id => :j, token => :'t',
    report_abort => true) as h), :'lease'::timestamptz, 'and does not extend the lease');
select is(queue.heartbeat(job_id => :j, token => :'t', extend => '10 minutes'),
    :'lease'::timestamptz, 'nor does the old heartbeat');
select is((select array_agg(h.abort_requested) from queue.heartbeat_many(
    job_ids => array[:j, 0]::bigint[], tokens => array[:'t', gen_random_uuid()]::uuid[],
    report_abort => true) as h), array[true, null], 'heartbeat_many reports it too');
select is(andal_test.running('c'), 1::bigint, 'the category slot stays held meanwhile');

select andal_test.state() as before \gset
select throws_ok(format('select queue.complete(%s, %L)', :j, :'t'), 'AN001', null,
    'the aborted worker cannot complete the job');
select is(andal_test.state(), :'before', 'that complete changed nothing');
select is((select completed from queue.complete_many(array[:j]::bigint[], array[:'t']::uuid[])),
    false, 'nor can complete_many');

select is(queue.fail(:j, :'t', 'stopped on request'), 'cancelled',
    'the worker acknowledges with fail: cancelled');
select is((select state from queue.job(:j)), 'cancelled', 'the job ends cancelled');
select is((select errors -> -1 ->> 'error' from queue.job(:j)), 'stopped on request',
    'with the attempt in its history');
select is(andal_test.running('c'), 0::bigint, 'its slot is freed');
select throws_ok(format('select queue.complete(%s, %L)', :j, :'t'), 'AN001', null,
    'a late complete gets lease lost');

select * from finish();
rollback;
