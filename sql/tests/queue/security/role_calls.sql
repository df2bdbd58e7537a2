-- The role matrix in practice: calls as each role succeed where granted and fail with 42501
-- where not.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.enqueue('{}') \g /dev/null

-- andal_producer
select lives_ok($$ set local role andal_producer; select queue.enqueue('{"by": "producer"}') $$,
    'producer: enqueue');
select lives_ok($$ set local role andal_producer;
                   select queue.enqueue_many(array['{}']::jsonb[]) $$, 'producer: enqueue_many');
select throws_ok($$ set local role andal_producer; select * from queue.claim('w') $$, '42501',
    'permission denied for function claim', 'producer: claim denied');
select throws_ok($$ set local role andal_producer; select queue.cancel(1) $$, '42501',
    'permission denied for function cancel', 'producer: cancel denied');

-- andal_worker: the whole run of a job, but not enqueue or cancel.
select lives_ok($$
    set local role andal_worker;
    do 'declare c record; begin
            select * into c from queue.claim(''w'', batch => 2) limit 1;
            perform queue.heartbeat(c.job_id, c.token);
            perform queue.fail(c.job_id, c.token, ''boom'', retry_in => ''0'');
            select * into c from queue.claim(''w'') limit 1;
            perform queue.release(c.job_id, c.token);
            select * into c from queue.claim(''w'') limit 1;
            perform queue.complete(c.job_id, c.token);
        end'
$$, 'worker: claim, heartbeat, fail, release, complete');
select throws_ok($$ set local role andal_worker; select queue.enqueue('{}') $$, '42501',
    'permission denied for function enqueue', 'worker: enqueue denied');
select throws_ok($$ set local role andal_worker; select queue.cancel(1) $$, '42501',
    'permission denied for function cancel', 'worker: cancel denied');
select throws_ok($$ set local role andal_worker; select queue.set_category_limit('c', 2) $$,
    '42501', 'permission denied for function set_category_limit',
    'worker: set_category_limit denied');

-- andal_admin
select lives_ok($$
    set local role andal_admin;
    do 'declare c record; v bigint; begin
            v := queue.enqueue(''{}'', queue => ''adm'');
            perform queue.configure_queue(''adm'', max_attempts => 2);
            perform queue.set_category_limit(''c'', 2);
            select * into c from queue.claim(''w'', queues => ''{adm}'') limit 1;
            perform queue.complete(c.job_id, c.token);
            v := queue.enqueue(''{}'', queue => ''adm'');
            perform queue.cancel(v);
            perform queue.requeue_dead(v);
            perform queue.purge_dead(''1 day'');
            perform queue.list_dead();
            perform queue.status();
            perform queue.version();
        end'
$$, 'admin: everything');
select throws_ok($$ set local role andal_admin; select queue._reap(10) $$, '42501',
    'permission denied for function _reap', 'admin: private helpers denied');

select * from finish();
rollback;
