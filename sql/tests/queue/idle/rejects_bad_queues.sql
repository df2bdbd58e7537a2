-- queue.idle refuses an empty queues array (null means every queue) and a bad name, and
-- writes nothing then.
begin;
select plan(3);

truncate queue.sleepers;
select throws_ok($$select queue.idle(queues => '{}')$$, '22023', null, 'empty queues: 22023');
select throws_ok($$select queue.idle(queues => array[''])$$, '22023', null,
    'an empty queue name: 22023');
select is((select count(*)::int from queue.sleepers), 0, 'nothing written');

select * from finish();
rollback;
