-- With history kept for the queue, queue.job answers after a job finished: completed (with
-- its result, start, worker and error history, by complete and by complete_many), dead and
-- cancelled; each keeps the time until which it is remembered. A queue without history is
-- not written to it.
begin;
\ir ../_fixtures.psql
select plan(14);

select queue.set_history(queue => 'h', retention => '7 days') \g /dev/null

select queue.enqueue('{"x": 1}', queue => 'h', max_attempts => 3) as j \gset
select token as t from queue.claim('w1', queues => '{h}') \gset
select queue.fail(:j, :'t', 'flaky', retry_in => '0') \g /dev/null
select token as t, lease_expires_at from queue.claim('w2', queues => '{h}') \gset
select queue.complete(:j, :'t', result => '{"ok": true}') \g /dev/null

select is((select state from queue.job(:j)), 'completed', 'a completed job is remembered');
select is((select result from queue.job(:j)), '{"ok": true}'::jsonb, 'with its result');
select is((select attempts from queue.job(:j)), 2, 'its attempts');
select is((select errors -> 0 ->> 'error' from queue.job(:j)), 'flaky',
    'the error of the failed attempt');
select is((select worker from queue.job(:j)), null, 'no worker holds a finished job');
select isnt((select started_at from queue.job(:j)), null, 'when its last attempt started');
select is((select kept_until - finished_at from queue.job(:j)), interval '7 days',
    'and how long it is kept');
select is(queue.job_payload(:j), '{"x": 1}'::jsonb, 'its payload, for admins');

select queue.enqueue('{}', queue => 'h') as m \gset
select job_id as mj, token as mt from queue.claim('w', queues => '{h}') \gset
select * from queue.complete_many(array[:mj]::bigint[], array[:'mt']::uuid[],
    array['{"many": 1}']::jsonb[]) \g /dev/null
select is((select result from queue.job(:m)), '{"many": 1}'::jsonb,
    'complete_many keeps history too');

select queue.enqueue('{}', queue => 'h', max_attempts => 1) as d \gset
select token as t from queue.claim('w', queues => '{h}') \gset
select queue.fail(:d, :'t', 'fatal') \g /dev/null
select is((select state from queue.history where job_id = :d), 'dead', 'a dead job is kept');
select queue.purge_dead('0') \g /dev/null
select is((select state from queue.job(:d)), 'dead', 'and remembered after its dead letter went');

select queue.enqueue('{}', queue => 'h') as c \gset
select queue.cancel(:c) \g /dev/null
select is((select state from queue.history where job_id = :c), 'cancelled',
    'a cancelled job is kept');

select queue.enqueue('{}', queue => 'other') as o \gset
select token as t from queue.claim('w', queues => '{other}') \gset
select queue.complete(:o, :'t') \g /dev/null
select is((select count(*) from queue.history where queue = 'other'), 0::bigint,
    'a queue without history writes none');
select is((select kept_until from queue.job(:o)),
    (select completed_at + interval '1 hour' from queue.completions where :o = any (ids)),
    'and remembers its completed jobs an hour only (queue.completions, not its history)');

select * from finish();
rollback;
