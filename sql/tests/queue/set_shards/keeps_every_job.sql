-- set_shards converts the live table in place: pending, scheduled, running and dead-lettered
-- jobs, their ids, tokens, leases, attempts, categories and dedup keys all survive (the
-- digest of every table is unchanged); a running job completes with its old token; each
-- queue's jobs sit in the shard shard_of names; dedup still holds; new ids continue after
-- the old ones; converting back to one shard keeps everything again.
begin;
\ir ../_fixtures.psql
select plan(14);

select queue.set_category_limit('c', 2) \g /dev/null
select queue.enqueue(jsonb_build_object('n', g), queue => 'q' || (g % 5),
    priority => g % 3, category => case when g % 4 = 0 then 'c' end,
    dedup_key => case when g % 7 = 0 then 'k' || g end,
    delay => case when g % 6 = 0 then interval '1 hour' else interval '0' end)
from generate_series(1, 60) as g \g /dev/null
create temp table held as select job_id, token from queue.claim('w1', batch => 5);
select queue.fail(h.job_id, h.token, 'boom', retryable => false)
from (select * from held order by job_id limit 1) as h \g /dev/null
select max(id) as old_max from queue.jobs \gset
select andal_test.state() as before \gset

select ok(queue.set_shards(shards => 3) = 59, 'moves the 59 live jobs');
select is(andal_test.state(), :'before', 'every job, dead letter and slot is unchanged');
select results_eq('select shard from queue.shards() order by 1', array[0, 1, 2],
    'three shards');
select is(
    (select count(*) from queue.jobs as j
     join queue.shards() as s on s.relation = j.tableoid::regclass::text
     where s.shard <> queue.shard_of(j.queue)),
    0::bigint, 'each job sits in its queue''s shard');
select is(queue.set_shards(shards => 3), 0::bigint, 'same count again: nothing to do');

select is(
    (select count(*) from held as h
     cross join lateral queue.complete(h.job_id, h.token) as c
     where h.job_id <> (select min(job_id) from held)),
    4::bigint, 'the running jobs complete with their old tokens');
select throws_ok(
    format('select queue.complete(%s, %L)',
        (select job_id from held order by job_id limit 1),
        (select token from held order by job_id limit 1)),
    'AN001', null, 'the dead-lettered one stays dead');
select is(queue.enqueue('{}', queue => 'q2', dedup_key => 'k42'),
    (select id from queue.jobs where dedup_key = 'k42'), 'dedup still holds');
select ok(queue.enqueue('{}', queue => 'q1') > :old_max, 'new ids continue after the old');
select (array_agg(id order by priority desc, available_at, id))[1:3]::text as best
from queue.jobs where status = 'pending' and available_at <= now() \gset
select is(
    (select array_agg(job_id)::text from queue.claim('w2', batch => 3)), :'best',
    'claim order is unchanged across shards');
select is(queue.requeue_dead((select min(job_id) from held)),
    (select min(job_id) from held), 'a dead letter requeues into the sharded table');

select andal_test.state() as sharded \gset
select ok(queue.set_shards(shards => 1) > 0, 'back to one shard');
select is(andal_test.state(), :'sharded', 'everything kept again');
select is((select count(*)::int from pg_inherits where inhparent = 'queue.jobs'::regclass), 1,
    'one partition again');

select * from finish();
rollback;
