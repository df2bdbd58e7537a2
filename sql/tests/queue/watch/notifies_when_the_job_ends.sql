-- queue.watch records a live job (queue.watches, never its row) so that its end (complete, complete_many, dead, cancelled)
-- sends NOTIFY andal_done with its id; it answers false for a job that is not live.
-- (Delivery itself is tested with real sessions in tests/test_job_control.py.)
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{}', queue => 'w') as j \gset
select is(queue.watch(job_id => :j), true, 'a live job can be watched');
select is((select count(*)::int from queue.watches where job_id = :j), 1, 'it is recorded');
select is((select watched from queue.jobs where id = :j), false, 'its row is not written');
select is(queue.watch(job_id => :j), true, 'watching twice is harmless');
select is(queue.watch(job_id => 987654321), false, 'an unknown job: false');
select throws_ok($$ select queue.watch(job_id => null) $$, '22004', null, 'null: 22004');
select is((select count(*)::int from queue.watches where job_id = 987654321), 0,
    'an unknown job is not recorded');
select c.job_id as cj, c.token as ct from queue.claim(worker => 'w', queues => array['w']) as c \gset
select queue.complete(job_id => :cj, token => :'ct');
select is((select count(*)::int from queue.watches), 0, 'the end deletes the record');

select * from finish();
rollback;
