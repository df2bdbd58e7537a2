-- queue_settings shows a queue's policy as configure_queue, pause and set_history left it; a
-- queue never configured shows the defaults of queue.queues (the same row an insert makes),
-- and reading writes nothing. Bad names are refused.
begin;
\ir ../_fixtures.psql
select plan(7);

select andal_test.state() as before \gset
select is((select configured from queue.queue_settings(queue => 'fresh')), false,
    'a queue never configured: configured is false');
select is(andal_test.state(), :'before', 'reading a queue''s policy writes nothing');

-- the defaults equal what the table gives a new row
insert into queue.queues (queue) values ('made');
select results_eq(
    $$ select max_attempts, lease, backoff, backoff_base, backoff_cap, jitter, notify,
           payload_limit, keep_results, cache_policy, paused, timeout, results_retention,
           dead_retention, history_retention
       from queue.queue_settings(queue => 'fresh') $$,
    $$ select max_attempts, lease, backoff, backoff_base, backoff_cap, jitter, notify,
           payload_limit, keep_results, cache_policy, paused, timeout, results_retention,
           dead_retention, history_retention
       from queue.queues where queue = 'made' $$,
    'the defaults shown are the column defaults of queue.queues');

select queue.configure_queue(queue => 'mail', timeout => '5 minutes', max_attempts => 9,
    lease => '2 minutes', backoff => 'exponential', backoff_base => '3 seconds',
    dead_retention => '2 days') \g /dev/null
select queue.pause(queue => 'mail') \g /dev/null
select results_eq(
    $$ select configured, max_attempts, lease, backoff, backoff_base, paused, timeout,
           dead_retention from queue.queue_settings(queue => 'mail') $$,
    $$ values (true, 9, interval '2 minutes', 'exponential'::text, interval '3 seconds', true,
           interval '5 minutes', interval '2 days') $$,
    'a configured and paused queue shows its policy');

select throws_ok($$ select * from queue.queue_settings(queue => null) $$, '22004', null,
    'null queue: 22004');
select throws_ok($$ select * from queue.queue_settings(queue => '') $$, '22023', null,
    'empty queue name: 22023');
set local role andal_monitor;
select is((select max_attempts from queue.queue_settings(queue => 'mail')), 9,
    'the read-only role may read it');
reset role;

select * from finish();
rollback;
