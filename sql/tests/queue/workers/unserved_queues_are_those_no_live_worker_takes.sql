-- queue.unserved_queues: a queue with ready jobs is unserved until a live worker holds a job
-- of it or registers for it; an expired registration serves nothing; a queue without ready
-- jobs is never listed.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'mail') from generate_series(1, 3) \g /dev/null
select queue.enqueue('{}', queue => 'pdf') \g /dev/null
select queue.enqueue('{}', queue => 'later', delay => '1 hour') \g /dev/null
select is(array(select queue || ':' || ready from queue.unserved_queues()),
    array['mail:3', 'pdf:1'], 'no worker: every queue with ready jobs, with its ready jobs');

select queue.register_worker(worker => 'w1', host => 'h', pid => 1, queues => '{mail}')
\g /dev/null
select is(array(select queue from queue.unserved_queues()), array['pdf'],
    'a registered worker serves the queues it named');

select * from queue.claim(worker => 'w2', queues => '{pdf}') \g /dev/null
select queue.enqueue('{}', queue => 'pdf') \g /dev/null
select is(array(select queue from queue.unserved_queues()), '{}'::text[],
    'a worker that does not register serves a queue while it holds a job of it');

update queue.worker_registrations set last_seen_at = now() - interval '2 minutes';
select is(array(select queue from queue.unserved_queues()), array['mail'],
    'an expired registration serves nothing');
select ok(not exists (select 1 from queue.unserved_queues() where queue = 'later'),
    'a queue with no ready job is not listed');
set local role andal_monitor;
select lives_ok('select * from queue.unserved_queues()', 'a monitor may ask');
rollback;
