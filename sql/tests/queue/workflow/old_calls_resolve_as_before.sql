-- The overloads with after leave every existing call unambiguous (no 42725): named and
-- positional calls of enqueue and enqueue_many resolve as before, none makes a waiting
-- job, and only a call naming after reaches the new forms.
begin;
\ir ../_fixtures.psql
select plan(8);

select lives_ok('select queue.enqueue(''{}'')', 'enqueue(payload)');
select lives_ok('select queue.enqueue(''{}'', ''q'')', 'enqueue(payload, queue) positional');
select lives_ok('select queue.enqueue(payload => ''{}'', queue => ''q'', priority => 1)',
    'enqueue by name');
select lives_ok('select queue.enqueue(''{}'', interval ''5 seconds'', ''q'')', 'the timeout form');
select lives_ok('select queue.enqueue(''{}'', ''{"traceparent": "x"}''::jsonb, ''q'')',
    'the trace form');
select lives_ok('select queue.enqueue_many(array[''{}'']::jsonb[], ''q'')',
    'enqueue_many(payloads, queue) positional');
select is((select count(*) from queue.jobs where status = 'waiting'), 0::bigint,
    'none of them made a waiting job');
select is((select count(*) from pg_proc as p where p.proname = 'enqueue'
    and p.pronamespace = 'queue'::regnamespace
    and 'after' = any (p.proargnames)), 1::bigint, 'one enqueue form takes after');

select * from finish();
rollback;
