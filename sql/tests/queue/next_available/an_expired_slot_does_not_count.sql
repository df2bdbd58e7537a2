-- next_available: a category slot whose job's lease expired does not make the category full
-- (the job is taken back by the next claim), so its ready jobs count.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.set_category_limit(category => 'solo', max_running => 1) \g /dev/null
select queue.enqueue('{}', queue => 'slot', category => 'solo') \g /dev/null
select queue.enqueue('{}', queue => 'slot', category => 'solo') \g /dev/null
select job_id from queue.claim(worker => 'w', queues => '{slot}') \gset
select is(queue.next_available(queues => '{slot}'), null, 'the slot is taken: not counted');
select andal_test.expire(:job_id) \g /dev/null
select ok(queue.next_available(queues => '{slot}') <= now(),
    'its lease expired: the category''s ready job counts');

select * from finish();
rollback;
