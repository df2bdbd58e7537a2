-- One paused queue does not make a claim of every queue read every queue: with 2,000
-- queues of ready jobs and one of them paused, the claim starts a few hundred index scans
-- on the live table, not one per queue (counted in pg_stat_xact_user_tables, so no loaded
-- machine changes the figure). The claim still takes the best jobs of the queues not
-- paused, also when a paused queue's backlog fills the head of the claim order and when a
-- gated job outside the gated head (behind a full category's backlog) is the best one.
begin;
\ir ../_fixtures.psql
select plan(6);

create function pg_temp.index_scans() returns bigint language sql as $$
    select coalesce(sum(s.idx_scan), 0)::bigint from pg_stat_xact_user_tables as s
    where s.relid in (select i.inhrelid from pg_inherits as i
                      where i.inhparent = 'queue.jobs'::regclass)
$$;

insert into queue.jobs (queue, payload, max_attempts, available_at)
select 'pq' || g, '{}', 5, now() - interval '1 minute' + g * interval '1 millisecond'
from generate_series(1, 2000) as g;
select queue.pause(queue => 'pq1');
select pg_temp.index_scans() as before \gset
create temp table got as select * from queue.claim(worker => 'w', batch => 10);
select cmp_ok(pg_temp.index_scans() - :before, '<', 1000::bigint,
    'a claim of every queue with one of 2,000 queues paused: fewer than 1,000 index scans');
select is((select count(*)::int from got where queue <> 'pq1'), 10,
    '... and it takes 10 jobs, none of the paused queue');
truncate queue.jobs;

-- a paused queue's backlog at the head of the claim order
insert into queue.jobs (queue, payload, max_attempts, priority)
select 'hot', '{}', 5, 5 from generate_series(1, 200);
insert into queue.jobs (queue, payload, max_attempts) values ('cold', '{}', 5);
select queue.pause(queue => 'hot');
select is((select array_agg(c.queue) from queue.claim(worker => 'w', batch => 10) as c),
    array['cold'], 'a paused backlog at the head: the job behind it is claimed');
truncate queue.jobs;

-- the best job is gated, behind a full category's backlog in the gated head
select queue.set_category_limit(category => 'full', max_running => 0);
select queue.set_category_limit(category => 'open', max_running => 5);
insert into queue.jobs (queue, category, payload, max_attempts, priority)
select 'g1', 'full', '{}', 5, 9 from generate_series(1, 200);
insert into queue.jobs (queue, category, payload, max_attempts, priority)
values ('g2', 'open', '{}', 5, 8);
insert into queue.jobs (queue, payload, max_attempts)
select 'u' || g, '{}', 5 from generate_series(1, 100) as g;
insert into queue.jobs (queue, payload, max_attempts) values ('pz', '{}', 5);
select queue.pause(queue => 'pz');
select is((select array_agg(c.queue) from queue.claim(worker => 'w', batch => 1) as c),
    array['g2'], 'the best claimable job is gated behind a full category: it is claimed');
select is((select count(*)::int from queue.claim(worker => 'w', batch => 200) as c
           where c.queue in ('pz', 'g1')), 0, 'the paused queue and the full category wait');
select is((select count(*)::int from queue.jobs where queue like 'u%' and status = 'running'),
    100, '... while every other job is claimed');

select * from finish();
rollback;
