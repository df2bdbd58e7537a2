-- retry_in overrides the queue's backoff; retry_in 0 makes the job ready at once.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}') as j \gset
select token as t from queue.claim('w') \gset
select queue.fail(:j, :'t', 'later', retry_in => interval '7 minutes') \g /dev/null
select is((select available_at from queue.jobs where id = :j), now() + interval '7 minutes',
    'available_at = now() + retry_in');

update queue.jobs set available_at = now() where id = :j;
select token as t from queue.claim('w') \gset
select queue.fail(:j, :'t', 'again', retry_in => interval '0') \g /dev/null
select is((select available_at from queue.jobs where id = :j), now(), 'retry_in 0: ready now');
select results_eq($$ select job_id from queue.claim('w') $$, array[:j::bigint],
    'and claimable at once');

select * from finish();
rollback;
