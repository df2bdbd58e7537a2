-- register_worker writes the worker's row (slots, queues, busy from its running jobs),
-- refreshes it keeping started_at, expires it after expire_after; unregister_worker removes
-- it; bad input writes nothing.
begin;
\ir ../_fixtures.psql
select plan(12);

select is(queue.register_worker(worker => 'w1', host => 'box', pid => 7, queues => '{a,b}',
    slots => 4, version => '1.2.3', expire_after => '30 seconds'),
    now() + interval '30 seconds', 'returns when the registration expires');
select results_eq(
    $$ select worker, host, pid, queues, slots, busy, version from queue.registered_workers() $$,
    $$ values ('w1', 'box', 7, '{a,b}'::text[], 4, 0::bigint, '1.2.3') $$,
    'the registration as given, busy 0');
select queue.enqueue('{}', queue => 'a') \g /dev/null
select count(*) from queue.claim(worker => 'w1', queues => '{a}') \g /dev/null
select is((select busy from queue.registered_workers() where worker = 'w1'), 1::bigint,
    'busy: its running jobs');

update queue.worker_registrations set started_at = now() - interval '1 hour',
    last_seen_at = now() - interval '10 seconds';
select queue.register_worker(worker => 'w1', host => 'box', pid => 7, queues => '{a,b}',
    slots => 6) \g /dev/null
select is((select started_at from queue.registered_workers()), now() - interval '1 hour',
    'a refresh by the same process keeps started_at');
select is((select slots from queue.registered_workers()), 6, 'and takes the new slots');
select is((select last_seen_at from queue.registered_workers()), now(), 'and last_seen_at');
select queue.register_worker(worker => 'w1', host => 'box', pid => 8) \g /dev/null
select is((select started_at from queue.registered_workers()), now(),
    'another process under the name: a new start');

select queue.register_worker(worker => 'old', host => 'box', pid => 9) \g /dev/null
update queue.worker_registrations set last_seen_at = now() - interval '2 minutes'
where worker = 'old';
select is((select count(*) from queue.registered_workers() where worker = 'old'), 0::bigint,
    'expired: not listed');
select queue.register_worker(worker => 'w2', host => 'box', pid => 10, queues => null,
    slots => null, expire_after => null) \g /dev/null
select is((select count(*) from queue.worker_registrations where worker = 'old'), 0::bigint,
    'a registration deletes the expired ones');
select results_eq($$ select queues, slots, expire_after from queue.worker_registrations
    where worker = 'w2' $$, $$ values ('{}'::text[], 0, interval '1 minute') $$,
    'null means the default');

select is(queue.unregister_worker(worker => 'w2'), true, 'unregister: true');
select is(queue.unregister_worker(worker => 'w2'), false, 'again: false');

select * from finish();
rollback;
