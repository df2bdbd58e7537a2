-- queue.job answers for a live job in each state: scheduled, pending, running (with the
-- worker holding it and its lease), failed awaiting retry (with the error history), and
-- pending again once the retry is due.
begin;
\ir ../_fixtures.psql
select plan(14);

select queue.enqueue('{}', queue => 'q', delay => '1 hour') as sched \gset
select is((select state from queue.job(:sched)), 'scheduled', 'a delayed job is scheduled');
select is((select available_at - enqueued_at from queue.job(:sched)), interval '1 hour',
    'with the time it becomes ready');

select queue.enqueue('{}', queue => 'q', category => 'c', priority => 3) as j \gset
select is((select state from queue.job(:j)), 'pending', 'a ready job is pending');
select row_eq($$ select queue, category, priority, attempts, max_attempts, worker
                 from queue.job($$ || :j || $$) $$,
    row('q'::text, 'c'::text, 3, 0, 5, null::text),
    'its queue, category, priority, attempts and max attempts');

select token as t, lease_expires_at as lease from queue.claim('w1', queues => '{q}') \gset
select is((select state from queue.job(:j)), 'running', 'a claimed job is running');
select is((select worker from queue.job(:j)), 'w1', 'held by the worker that claimed it');
select is((select lease_expires_at from queue.job(:j)), :'lease'::timestamptz,
    'until its lease expires');
select is((select attempts from queue.job(:j)), 1, 'attempts counts the run');
select isnt((select started_at from queue.job(:j)), null, 'started_at is the claim time');

select queue.fail(:j, :'t', 'boom', retry_in => '10 minutes') \g /dev/null
select is((select state from queue.job(:j)), 'failed', 'a failed job waits for its retry');
select is((select errors -> 0 ->> 'error' from queue.job(:j)), 'boom',
    'with its error history');
select is((select worker from queue.job(:j)), null, 'and no worker holds it');

update queue.jobs set available_at = now() where id = :j;
select is((select state from queue.job(:j)), 'pending', 'pending again when the retry is due');
select is((select jsonb_array_length(errors) from queue.job(:j)), 1, 'keeping its history');

select * from finish();
rollback;
