-- next_available: a job of a rate-limited category whose window is used up becomes
-- claimable when the window lets the next start in.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.set_category_limit(category => 'api', max_running => 5) \g /dev/null
select queue.set_rate_limit(category => 'api', starts => 1, per => '1 minute') \g /dev/null
select queue.enqueue('{}', queue => 'calls', category => 'api') \g /dev/null
select queue.enqueue('{}', queue => 'calls', category => 'api') \g /dev/null
select ok(queue.next_available(queues => '{calls}') <= now(), 'window free: ready now');
select count(*) from queue.claim(worker => 'w', queues => '{calls}', batch => 2) \g /dev/null
select is(queue.next_available(queues => '{calls}'),
    (select max(t) from queue.categories, unnest(rate_log) as t where category = 'api')
        + interval '1 minute',
    'window used up: when its start leaves the window');

select * from finish();
rollback;
