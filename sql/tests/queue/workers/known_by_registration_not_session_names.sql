-- queue.workers(): a worker is known by its registration or its running jobs, never by
-- parsing session names: a session named like a worker is no worker, and a worker whose
-- long name cut its session's ' listen' suffix is one row, its session counted.
begin;
\ir ../_fixtures.psql
select plan(7);

-- the driver's default name for a worker on a host with a long name (cut at 40 characters)
select repeat('h', 40) || ':4242:abcdef' as long_name \gset
-- this very session, named as the driver names that worker's listen session: 66 bytes, cut
-- to 63 by PostgreSQL ('andal hhh...:4242:abcdef l')
select set_config('application_name', left('andal ' || :'long_name' || ' listen', 63), true)
    \g /dev/null
select queue.register_worker(worker => :'long_name', host => repeat('h', 40), pid => 4242,
    queues => '{mail}', slots => 8) \g /dev/null
select queue.enqueue('{}', queue => 'mail') \g /dev/null
select count(*) from queue.claim(worker => :'long_name', queues => '{mail}') \g /dev/null

select is((select count(*) from queue.workers() where worker like 'hhhh%'), 1::bigint,
    'a worker with a very long name is one row');
select is((select connections from queue.workers() where worker = :'long_name'), 1::bigint,
    'its session with the cut suffix is counted as its own');
select is((select running from queue.workers() where worker = :'long_name'), 1::bigint,
    'its running job on the same row');

-- pg_stat_activity is read once per transaction: clear that snapshot after renaming
select set_config('application_name', 'andal intruder', true) \g /dev/null
select pg_stat_clear_snapshot() \g /dev/null
select is((select count(*) from queue.workers() where worker = 'intruder'), 0::bigint,
    'a session named like a worker, never registered: not a worker');

-- a worker that does not register (an older driver): listed while it holds jobs
select queue.enqueue('{}', queue => 'old') \g /dev/null
select count(*) from queue.claim(worker => 'old-driver', queues => '{old}') \g /dev/null
select is((select running from queue.workers() where worker = 'old-driver'), 1::bigint,
    'an unregistered worker holding a job: listed by its job');

-- an expired registration is not listed
select queue.register_worker(worker => 'gone', host => 'h', pid => 1) \g /dev/null
update queue.worker_registrations set last_seen_at = now() - interval '2 minutes'
where worker = 'gone';
select is((select count(*) from queue.workers() where worker = 'gone'), 0::bigint,
    'a registration not refreshed within expire_after: not listed');
update queue.worker_registrations set last_seen_at = now() where worker = 'gone';
select is((select running from queue.workers() where worker = 'gone'), 0::bigint,
    'a live registration without jobs: listed with 0 running');

select * from finish();
rollback;
