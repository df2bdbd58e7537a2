-- queue.maintain forgets queue and category rows that say nothing, so names a producer made
-- up do not accumulate for ever: queue rows equal to the defaults, and categories of the
-- default limit made over a day ago that no running job holds. Configured queues, categories
-- with another limit or a running job stay; a forgotten queue keeps working.
begin;
\ir ../_fixtures.psql
select plan(7);
truncate queue.wal_samples;

select count(queue.enqueue('{}', queue => 'junk' || g, category => 'junk' || g))
from generate_series(1, 50) as g \g /dev/null
select queue.configure_queue('kept', max_attempts => 3) \g /dev/null
select queue.set_category_limit('limited', 5) \g /dev/null
select queue.enqueue('{}', queue => 'busy', category => 'held') \g /dev/null
select count(*) from queue.claim('w', queues => '{busy}') \g /dev/null
update queue.categories set created_at = now() - interval '2 days';
select queue.enqueue('{}', queue => 'fresh', category => 'fresh') \g /dev/null

select queue.maintain() \g /dev/null
select is((select array_agg(queue order by queue) from queue.queues), array['kept'],
    'only the configured queue row is left');
select is((select array_agg(category order by category) from queue.categories),
    array['fresh', 'held', 'limited'],
    'categories with a limit, a running job or made recently are left');
select is((select count(*) from queue.jobs where queue like 'junk%'), 50::bigint,
    'the jobs of forgotten names are untouched');

-- a forgotten queue and category keep working (the defaults)
select is((select count(*) from queue.claim('w', queues => '{junk1}')), 1::bigint,
    'a job of a forgotten category is claimed (default limit 1)');
select queue.enqueue('{}', queue => 'junk1', category => 'junk1') \g /dev/null
select is((select count(*) from queue.claim('w', queues => '{junk1}')), 0::bigint,
    'and the default limit (1) holds');
select is((select max_attempts from queue.configure_queue('junk2', lease => '5 minutes')), 5,
    'a forgotten queue can be configured again');
select is((select count(*) from queue.queues where queue = 'junk2'), 1::bigint,
    'its row is back');

select * from finish();
rollback;
