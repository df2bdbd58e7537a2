-- queue.idle puts this session to sleep on its queues (one row per queue key; null: every
-- queue, key 0), a later call replaces the queues of an earlier one, queue.busy wakes it;
-- the hint is wanted while some session sleeps on the queue, or while none uses queue.idle.
begin;
select plan(8);

truncate queue.sleepers;
select ok(queue._hint_wanted(queue._hint_key('iq_a')), 'a queue nobody calls queue.idle for is hinted');
select queue.idle(queues => array['iq_a', 'iq_b', 'iq_a']);
select is((select count(*)::int from queue.sleepers where pid = pg_backend_pid() and sleeping),
    2, 'one sleeping row per queue');
select ok(queue._hint_wanted(queue._hint_key('iq_a')), 'a sleeper is hinted');
select queue.busy();
select ok(not queue._hint_wanted(queue._hint_key('iq_a')), 'a busy user of the queue: no hint');
select ok(queue._hint_wanted(queue._hint_key('iq_other')), 'another queue keeps the hint');
select queue.idle(queues => null);
select is((select array_agg(key) from queue.sleepers where pid = pg_backend_pid()), array[0],
    'idle on every queue replaces the queues of before');
select ok(queue._hint_wanted(queue._hint_key('iq_other')), 'a sleeper on every queue is hinted for any queue');
select queue.busy();
select ok(not queue._hint_wanted(queue._hint_key('iq_other')), '... and busy, for none');

select * from finish();
rollback;
