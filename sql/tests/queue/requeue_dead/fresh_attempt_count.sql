-- requeue_dead brings a dead job back under its id as pending, ready now, with a fresh
-- attempt count; its error history is kept; it can run its full attempts again.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.enqueue('{"r": 1}', max_attempts => 1, category => 'c') as j \gset
select token as t from queue.claim('w') \gset
select queue.fail(:j, :'t', 'boom') \g /dev/null
update queue.dead_letters set died_at = now() - interval '1 day';

select is(queue.requeue_dead(:j), :j::bigint, 'returns the job id');
select is((select count(*) from queue.dead_letters), 0::bigint, 'no longer dead');
select is(
    (select row(status, attempt, max_attempts, payload, category, available_at)::text
     from queue.jobs where id = :j),
    row('pending', 0, 1, '{"r": 1}'::jsonb, 'c', now())::text,
    'pending, attempt 0, same payload and options, ready now');
select is((select errors -> 0 ->> 'error' from queue.jobs where id = :j), 'boom',
    'the error history is kept');
select is((select attempt from queue.claim('w')), 1, 'claimed again at attempt 1');

select throws_ok(format('select queue.requeue_dead(%s)', :j), '55000',
    format('job %s is live, not dead', :j), 'requeue a live job: 55000');
select is((select status from queue.jobs where id = :j), 'running', 'the live job is untouched');

select * from finish();
rollback;
