-- complete_many writes its batch's latency histograms as 16 counts in its deleting statement,
-- a deliberate copy of queue._hist (and queue._hist_add for a row of the minute that exists):
-- both give the same buckets, for the run (claim to completion) and the wait (availability to
-- claim), on a new row and on one that already holds counts.
begin;
\ir ../_fixtures.psql
select plan(4);

-- six jobs whose run and wait fall in six different buckets (the bounds: queue._hist_bounds);
-- each run just past a bound, with a quarter of a second or more to the next, so that the
-- moment of the call (the run is measured at it) cannot move one across a bound
select queue.enqueue('{}', queue => 'hist') from generate_series(1, 6) \g /dev/null
create temp table c as
select c.job_id, c.token, row_number() over (order by c.job_id) as k
from queue.claim(worker => 'w', queues => array['hist'], batch => 6) as c;
create temp table lat (k int, run_ms double precision, wait_ms double precision);
insert into lat values (1, 251, 7), (2, 1001, 70), (3, 2501, 700), (4, 5001, 7000),
    (5, 10001, 1.5), (6, 30001, 0.5);
update queue.jobs as j
set claimed_at = clock_timestamp() - make_interval(secs => l.run_ms / 1000),
    available_at = clock_timestamp() - make_interval(secs => (l.run_ms + l.wait_ms) / 1000),
    lease_expires_at = clock_timestamp() + interval '1 minute'
from c join lat as l using (k) where j.id = c.job_id;

select count(*) from queue.complete_many(job_ids => array(select job_id from c order by k),
    tokens => array(select token from c order by k)) \g /dev/null
select is((select run_hist from queue.stat_minutes where queue = 'hist'),
    queue._hist(array(select run_ms from lat order by k)), 'the run histogram: queue._hist''s');
select is((select wait_hist from queue.stat_minutes where queue = 'hist'),
    queue._hist(array(select wait_ms from lat order by k)), 'the wait histogram: queue._hist''s');

-- the same six again: the row of the minute adds them (queue._hist_add)
select queue.enqueue('{}', queue => 'hist') from generate_series(1, 6) \g /dev/null
truncate c;
insert into c
select c.job_id, c.token, row_number() over (order by c.job_id)
from queue.claim(worker => 'w', queues => array['hist'], batch => 6) as c;
update queue.jobs as j
set claimed_at = clock_timestamp() - make_interval(secs => l.run_ms / 1000),
    available_at = clock_timestamp() - make_interval(secs => (l.run_ms + l.wait_ms) / 1000),
    lease_expires_at = clock_timestamp() + interval '1 minute'
from c join lat as l using (k) where j.id = c.job_id;
select count(*) from queue.complete_many(job_ids => array(select job_id from c order by k),
    tokens => array(select token from c order by k)) \g /dev/null
select is((select run_hist from queue.stat_minutes where queue = 'hist'),
    queue._hist_add(queue._hist(array(select run_ms from lat)),
        queue._hist(array(select run_ms from lat))), 'added to the row: queue._hist_add''s');
select is((select wait_hist from queue.stat_minutes where queue = 'hist'),
    queue._hist_add(queue._hist(array(select wait_ms from lat)),
        queue._hist(array(select wait_ms from lat))), 'the wait too');

select * from finish();
rollback;
