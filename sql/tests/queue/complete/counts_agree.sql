-- queue.complete counts its job in this backend's row of the minute: the first completion of
-- a minute through queue._count_completed's upsert (the row does not exist yet), the next by
-- its own update of that row. Both give the buckets of queue._hist, for the run (claim to
-- completion) and the wait (availability to claim), and the count and run time.
begin;
\ir ../_fixtures.psql
select plan(4);

-- four jobs whose run and wait fall in different buckets (the bounds: queue._hist_bounds),
-- each just past a bound with a quarter of a second or more to the next
select queue.enqueue('{}', queue => 'counted') from generate_series(1, 4) \g /dev/null
create temp table c as
select c.job_id, c.token, row_number() over (order by c.job_id) as k
from queue.claim(worker => 'w', queues => array['counted'], batch => 4) as c;
create temp table lat (k int, run_ms double precision, wait_ms double precision);
insert into lat values (1, 251, 7), (2, 1001, 70), (3, 2501, 0.5), (4, 10001, 7000);
update queue.jobs as j
set claimed_at = clock_timestamp() - make_interval(secs => l.run_ms / 1000),
    available_at = clock_timestamp() - make_interval(secs => (l.run_ms + l.wait_ms) / 1000),
    lease_expires_at = clock_timestamp() + interval '1 minute'
from c join lat as l using (k) where j.id = c.job_id;
select queue.complete(job_id => c.job_id, token => c.token) from c order by c.k \g /dev/null

-- summed over the queue's rows: the four may straddle the end of a minute
create temp view counted as
select sum(s.completed) as completed, sum(s.run_count) as run_count,
    array(select sum(u.h)::bigint from queue.stat_minutes as s2
        cross join unnest(s2.run_hist) with ordinality as u (h, i)
        where s2.queue = 'counted' group by u.i order by u.i) as run_hist,
    array(select sum(u.h)::bigint from queue.stat_minutes as s2
        cross join unnest(s2.wait_hist) with ordinality as u (h, i)
        where s2.queue = 'counted' group by u.i order by u.i) as wait_hist
from queue.stat_minutes as s where s.queue = 'counted';

select is((select completed from counted), 4::numeric, 'four completions counted');
select is((select run_count from counted), 4::numeric, 'four runs counted');
select is((select run_hist from counted), queue._hist(array(select run_ms from lat order by k)),
    'the run histogram: queue._hist''s');
select is((select wait_hist from counted),
    queue._hist(array(select wait_ms from lat order by k)), 'the wait histogram: queue._hist''s');

select * from finish();
rollback;
