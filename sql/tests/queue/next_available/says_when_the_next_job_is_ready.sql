-- next_available: the time the next job of the scope becomes claimable: a delayed job, a
-- backed-off retry, a schedule's tick; null when nothing is scheduled. Full and paused
-- categories and paused queues do not count (their time is not a clock's).
begin;
\ir ../_fixtures.psql
select plan(12);

select is(queue.next_available(), null, 'nothing at all: null');

select queue.enqueue('{}', queue => 'later', delay => '1 hour') \g /dev/null
select is(queue.next_available(), now() + interval '1 hour', 'a delayed job: its availability');
select is(queue.next_available(queues => '{later}'), now() + interval '1 hour', 'its queue');
select is(queue.next_available(queues => '{other}'), null, 'another queue: null');

-- a failed attempt backed off by 10 minutes
select queue.enqueue('{}', queue => 'retry') \g /dev/null
select job_id, token from queue.claim(worker => 'w', queues => '{retry}') \gset
select is(queue.next_available(queues => '{retry}'), null, 'its only job running: null');
select queue.fail(job_id => :job_id, token => :'token', error => 'boom',
    retry_in => '10 minutes') \g /dev/null
select is(queue.next_available(queues => '{retry}'), now() + interval '10 minutes',
    'a backed-off retry: when its backoff ends');
select is(queue.next_available(queues => '{retry,later}'), now() + interval '10 minutes',
    'several queues: the earliest');

-- a full category: its pending job does not count, a free slot makes it count
select queue.set_category_limit(category => 'one', max_running => 1) \g /dev/null
select queue.enqueue('{}', queue => 'gated', category => 'one') \g /dev/null
select queue.enqueue('{}', queue => 'gated', category => 'one') \g /dev/null
select job_id as g1, token as t1 from queue.claim(worker => 'w', queues => '{gated}') \gset
select is(queue.next_available(queues => '{gated}'), null,
    'a full category''s ready job: not counted');
select queue.complete(job_id => :g1, token => :'t1') \g /dev/null
select ok(queue.next_available(queues => '{gated}') <= now(),
    'a slot free: ready now (at or before now())');

select queue.pause(queue => 'gated') \g /dev/null
select is(queue.next_available(queues => '{gated}'), null, 'a paused queue: not counted');

-- a schedule's next tick
select queue.schedule(name => 'hourly', queue => 'ticks', every => '1 hour') \g /dev/null
select is(queue.next_available(queues => '{ticks}'),
    (select next_at from queue.schedules where name = 'hourly'), 'a schedule''s next tick');

select throws_ok($$ select queue.next_available(queues => '{null}') $$, '22023', null,
    'a null queue name: 22023');

select * from finish();
rollback;
