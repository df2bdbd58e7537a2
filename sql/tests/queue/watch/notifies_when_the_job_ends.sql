-- queue.watch flags a live job so that its end (complete, complete_many, dead, cancelled)
-- sends NOTIFY andal_done with its id; it answers false for a job that is not live.
-- (Delivery itself is tested with real sessions in tests/test_job_control.py.)
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}', queue => 'w') as j \gset
select is(queue.watch(job_id => :j), true, 'a live job can be watched');
select is((select watched from queue.jobs where id = :j), true, 'it is flagged');
select is(queue.watch(job_id => :j), true, 'watching twice is harmless');
select is(queue.watch(job_id => 987654321), false, 'an unknown job: false');
select throws_ok($$ select queue.watch(job_id => null) $$, '22004', null, 'null: 22004');

select * from finish();
rollback;
