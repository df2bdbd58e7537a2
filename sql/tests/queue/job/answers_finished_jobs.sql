-- queue.job after a job finished, without history: dead and cancelled jobs answer from the
-- dead letters, a completed job of a queue with keep_results from its result; a completed
-- job of a queue that keeps neither is remembered for an hour (queue.completions), then
-- forgotten by queue.maintain() (no row, as for an id andal never had).
begin;
\ir ../_fixtures.psql
select plan(15);

select queue.enqueue('{}', queue => 'q', max_attempts => 1) as dead \gset
select token as t from queue.claim('w', queues => '{q}') \gset
select queue.fail(:dead, :'t', 'broken') \g /dev/null
select is((select state from queue.job(:dead)), 'dead', 'a job past its attempts is dead');
select is((select errors -> 0 ->> 'error' from queue.job(:dead)), 'broken',
    'with its error history');
select isnt((select finished_at from queue.job(:dead)), null, 'and the time it died');

select queue.enqueue('{}', queue => 'q') as gone \gset
select queue.cancel(:gone) \g /dev/null
select is((select state from queue.job(:gone)), 'cancelled', 'a cancelled job is cancelled');

select queue.configure_queue('kept', keep_results => true) \g /dev/null
select queue.enqueue('{}', queue => 'kept') as kept \gset
select token as t from queue.claim('w', queues => '{kept}') \gset
select queue.complete(:kept, :'t', result => '{"answer": 42}') \g /dev/null
select is((select state from queue.job(:kept)), 'completed', 'a kept result says completed');
select is((select result from queue.job(:kept)), '{"answer": 42}'::jsonb, 'with the result');
select is((select queue from queue.job(:kept)), 'kept', 'and its queue');

select queue.enqueue('{}', queue => 'q') as done \gset
select token as t from queue.claim('w', queues => '{q}') \gset
select queue.complete(:done, :'t') \g /dev/null
select is((select state from queue.job(:done)), 'completed',
    'a completed job of a queue without history is remembered');
select is((select queue from queue.job(:done)), 'q', 'with its queue');
select is((select kept_until - finished_at from queue.job(:done)), interval '1 hour',
    'for an hour');
select queue.maintain() \g /dev/null
select is((select state from queue.job(:done)), 'completed', 'maintain keeps it in the hour');
update queue.completions set completed_at = completed_at - interval '61 minutes';
select queue.maintain() \g /dev/null
select is_empty($$ select * from queue.job($$ || :done || $$) $$,
    'after the hour maintain forgets it: no row');
select is_empty($$ select * from queue.completions $$, 'and its record is gone');

select is_empty($$ select * from queue.job(987654321) $$, 'no row for an id andal never had');
select throws_ok($$ select * from queue.job(null) $$, '22004', null, 'null job_id: 22004');

select * from finish();
rollback;
