-- queue.jobs_by lists a queue's jobs newest first, filtered by state, one page at a time
-- (before => the last id of the previous page); each job once, as queue.job describes it.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{}', queue => 'q') from generate_series(1, 5) \g /dev/null
select queue.enqueue('{}', queue => 'other') \g /dev/null
select queue.enqueue('{}', queue => 'q', delay => '1 hour') as sched \gset
select job_id as running from queue.claim('w', queues => '{q}') \gset
select queue.enqueue('{}', queue => 'q') as dead \gset
select queue.cancel(:dead) \g /dev/null

select is((select count(*) from queue.jobs_by(queue => 'q')), 7::bigint,
    'every job of the queue, live or dead, and none of another queue');
select is((select array_agg(job_id) from queue.jobs_by(queue => 'q', state => 'pending', lim => 2)),
    (select array_agg(id order by id desc) from (
        select id from queue.jobs where queue = 'q' and status = 'pending'
          and available_at <= now() order by id desc limit 2) as x),
    'the newest pending jobs first');
select is((select count(*) from queue.jobs_by(queue => 'q', state => 'pending')), 4::bigint,
    'pending: the ready jobs only');
select is((select array_agg(job_id) from queue.jobs_by(queue => 'q', state => 'running')),
    array[:running::bigint], 'running');
select is((select array_agg(job_id) from queue.jobs_by(queue => 'q', state => 'scheduled')),
    array[:sched::bigint], 'scheduled');
select is((select array_agg(job_id) from queue.jobs_by(queue => 'q', state => 'cancelled')),
    array[:dead::bigint], 'cancelled, from the dead letters');

-- Paging: pages of 3 joined are the whole list, in order, without repeats.
create temp table pages as
with recursive p (n, ids) as (
    select 1, array(select job_id from queue.jobs_by(queue => 'q', lim => 3))
    union all
    select p.n + 1, array(select job_id from queue.jobs_by(
        queue => 'q', before => p.ids[cardinality(p.ids)], lim => 3))
    from p where cardinality(p.ids) = 3
)
select n, ids from p;
select is((select array_agg(i order by n, o) from pages, unnest(ids) with ordinality as u (i, o)),
    (select array_agg(job_id) from queue.jobs_by(queue => 'q')),
    'keyset pages cover the list in order');

select throws_ok($$ select * from queue.jobs_by(state => 'done') $$, '22023', null,
    'an unknown state: 22023');
select throws_ok($$ select * from queue.jobs_by(lim => 0) $$, '22023', null,
    'lim outside 1..1000: 22023');

select * from finish();
rollback;
