-- Every housekeeping step of queue.maintain() runs in a subtransaction of its own: a step that
-- fails is taken back and reported with a WARNING naming it, and the others still run (the
-- take-back of expired leases, due schedules, the history roll). The failure is injected by
-- replacing a step's private function inside this test's transaction (rolled back); the
-- WARNING is checked by tests/test_maintain_steps.py.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.set_history(queue => 'h', retention => '1 hour') \g /dev/null
select queue.enqueue('{}', queue => 'q', max_attempts => 3) as j \gset
select token from queue.claim('w', queues => '{q}') \gset
select andal_test.expire(:j);
select queue.schedule(name => 'tick', queue => 'ticks', payload => '{}', every => '1 minute')
    \g /dev/null
update queue.schedules set next_at = now() - interval '1 second' where name = 'tick';

-- the history roll fails (as a month-wide partition width made it fail on every call)
create or replace function queue._history_roll() returns int
language plpgsql as $$
begin
    delete from queue.history_settings;  -- a partial write, to be taken back
    raise exception 'cannot bin by months' using errcode = '0A000';
end
$$;

select lives_ok($$ select queue.maintain() $$, 'maintain returns although a step failed');
select is((select status from queue.jobs where id = :j), 'pending',
    'the expired lease was taken back');
select is((select count(*) from queue.jobs where queue = 'ticks'), 1::bigint,
    'the due schedule fired');
select is((select count(*) from queue.history_settings), 1::bigint,
    'the failed step''s writes were taken back');

select * from finish();
rollback;
