-- The take-back of a parent's expired lease: with attempts left the child keeps waiting;
-- when it dead-letters the parent, the child is cancelled in the same transaction. A
-- waiting child cancelled by queue.cancel leaves its parents' edges; its parent's end later
-- changes nothing. waiting is a state of queue.jobs_by.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.configure_queue(queue => 'wp', max_attempts => 2) is not null as configured \gset
select queue.enqueue('{}', queue => 'wp') as p \gset
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as c \gset
select is((select array_agg(job_id) from queue.jobs_by(state => 'waiting')),
    array[:c]::bigint[], 'jobs_by lists the waiting job');
select job_id as pj from queue.claim('w', queues => '{wp}') \gset
select andal_test.expire(:p);
select queue.maintain() \g /dev/null
select is((select state from queue.job(:c)), 'waiting', 'a retried parent: the child waits');
update queue.jobs set available_at = now() where id = :p;
select job_id as pj from queue.claim('w', queues => '{wp}') \gset
select andal_test.expire(:p);
select queue.maintain() \g /dev/null
select is((select state from queue.job(:p)), 'dead', 'the last attempt''s take-back kills the parent');
select is((select state from queue.job(:c)), 'cancelled', 'and cancels the child');

select queue.enqueue('{}', queue => 'wp') as q \gset
select queue.enqueue('{}', after => array[:q]::bigint[], queue => 'wc') as qc \gset
select queue.cancel(:qc);
select is((select count(*) from queue.job_edges where child_id = :qc), 0::bigint,
    'a cancelled child drops its edges');
select job_id as qj, token as qt from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:qj, :'qt');
select is((select state from queue.job(:qc)), 'cancelled', 'the parent''s end leaves it cancelled');

select * from finish();
rollback;
