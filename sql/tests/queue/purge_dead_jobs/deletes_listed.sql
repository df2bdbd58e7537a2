-- purge_dead_jobs deletes exactly the listed dead letters and skips ids that are not dead.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{}') as a \gset
select queue.enqueue('{}') as b \gset
select queue.enqueue('{}') as c \gset
select queue.enqueue('{}') as live \gset
select queue.cancel(:a) \g /dev/null
select queue.cancel(:b) \g /dev/null
select queue.cancel(:c) \g /dev/null

select is(queue.purge_dead_jobs(job_ids => array[:a, :c, :live, -1]::bigint[]), 2::bigint,
    'two of the ids were dead letters');
select results_eq($$ select job_id from queue.dead_letters $$, array[:b::bigint],
    'the unlisted dead letter stays');
select results_eq($$ select id from queue.jobs $$, array[:live::bigint],
    'a live job whose id is listed is not touched');
select is(queue.purge_dead_jobs(job_ids => array[:a]::bigint[]), 0::bigint,
    'purging again finds nothing');

select * from finish();
rollback;
