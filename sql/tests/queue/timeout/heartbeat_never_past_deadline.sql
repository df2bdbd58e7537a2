-- Heartbeats cannot extend a lease past the attempt's deadline (claim time + timeout); the
-- deadline comes from the job's timeout, else the queue's (configure_queue), and is shown
-- by claim's deadlines form.
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{}', queue => 'q', timeout => '10 seconds') \g /dev/null
create temporary table c as select * from queue.claim('w', queues => '{q}', lease => '5 seconds');
select claimed_at as claimed from queue.jobs \gset
select is((select lease_expires_at from c), :'claimed'::timestamptz + interval '5 seconds',
    'a lease shorter than the timeout is the lease');
select is(queue.heartbeat(job_id, token, extend => '1 hour'),
    :'claimed'::timestamptz + interval '10 seconds', 'a heartbeat stops at the deadline') from c;
select is((select lease_expires_at from queue.heartbeat_many(array[job_id], array[token],
    extend => '1 hour')), :'claimed'::timestamptz + interval '10 seconds',
    'so does heartbeat_many') from c;
select is((select lease_expires_at - claimed_at from queue.jobs), interval '10 seconds',
    'the stored lease ends at the deadline');

select queue.configure_queue('slow', timeout => '30 seconds') \g /dev/null
select queue.enqueue('{}', queue => 'slow') \g /dev/null
select queue.enqueue('{}', queue => 'slow', timeout => '1 minute', priority => -1) \g /dev/null
create temporary table d as select * from queue.claim(worker => 'w', queues => '{slow}',
    batch => 2, lease => '1 hour', deadlines => true);
select is(array(select d.deadline - j.claimed_at from d join queue.jobs as j on j.id = d.job_id
                order by d.priority desc),
    array[interval '30 seconds', interval '1 minute'],
    'the queue''s timeout is the default, a job''s own timeout wins');
select is(array(select lease_expires_at from d order by priority desc),
    array(select deadline from d order by priority desc),
    'the lease returned never passes the deadline');

select queue.enqueue('{}', queue => 'free') \g /dev/null
select is((select deadline from queue.claim(worker => 'w', queues => '{free}', batch => 1,
    lease => null, deadlines => true)), null::timestamptz, 'no timeout: no deadline');
select queue.configure_queue('slow', timeout => '0') \g /dev/null
select is((select timeout from queue.queues where queue = 'slow'), null::interval,
    'timeout 0 removes the queue''s timeout');

select * from finish();
rollback;
