-- fail_outcome returns status, reason and the next availability; fail keeps returning the
-- status alone. An error over queue.config.max_error_bytes is stored cut to that bound, with
-- the marker ' ... (cut at N bytes)', in the error history and the dead letter.
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{}', queue => 'o', max_attempts => 2) as j \gset
select token as t from queue.claim('w', queues => '{o}') \gset
select row(status, reason, available_at - now())::text as o
from queue.fail_outcome(:j, :'t', 'boom', retry_in => '10 seconds') \gset
select is(:'o', row('pending', 'retry', interval '10 seconds')::text,
    'a retry: pending, retry, and when it can be claimed again');

update queue.jobs set available_at = now() where id = :j;
select token as t from queue.claim('w', queues => '{o}') \gset
select is((select row(status, reason, available_at)::text
           from queue.fail_outcome(:j, :'t', repeat('x', 1048576))),
    row('dead', 'exhausted', null)::text, 'out of attempts: dead, exhausted, no availability');
select ok((select octet_length(errors -> -1 ->> 'error') from queue.dead_letters
           where job_id = :j) <= 65536 + 32, 'a 1 MB error is stored within the bound');
select ok((select errors -> -1 ->> 'error' from queue.dead_letters where job_id = :j)
    like '% ... (cut at 65536 bytes)', 'with the marker');
select ok((select octet_length(last_error) <= 65536 + 32 from queue.dead_letters
           where job_id = :j), 'the dead letter''s last error too');

select queue.enqueue('{}', queue => 'o') as k \gset
select token as t from queue.claim('w', queues => '{o}') \gset
select is((select reason from queue.fail_outcome(:k, :'t', 'bad input', retryable => false)),
    'non_retryable', 'retryable false: the dead letter''s reason non_retryable');

select queue.enqueue('{}', queue => 'o') as m \gset
select token as t from queue.claim('w', queues => '{o}') \gset
select queue.cancel(:m) \g /dev/null
select is((select row(status, reason)::text from queue.fail_outcome(:m, :'t', 'stopped')),
    row('cancelled', 'cancelled')::text, 'an abort was requested: cancelled');

select queue.enqueue('{}', queue => 'o') as n \gset
select token as t from queue.claim('w', queues => '{o}') \gset
select is(queue.fail(:n, :'t', 'boom'), 'pending', 'queue.fail still returns the status');

select * from finish();
rollback;
