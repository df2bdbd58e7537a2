-- fail(retryable => false) dead-letters the job at once, whatever attempts are left, with
-- reason non_retryable.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{}', max_attempts => 10) as j \gset
select token as t from queue.claim('w') \gset
select is(queue.fail(:j, :'t', 'bad input', retryable => false), 'dead', 'returns dead');
select is((select count(*) from queue.jobs), 0::bigint, 'the job left the live table');
select is(
    (select row(reason, attempt, last_error)::text from queue.dead_letters where job_id = :j),
    '(non_retryable,1,"bad input")', 'reason non_retryable after 1 of 10 attempts');
select is((select errors -> 0 ->> 'error' from queue.dead_letters where job_id = :j),
    'bad input', 'the error is in the history');

select * from finish();
rollback;
