-- The batch of a claim of several queues is shared round-robin also when a category is left
-- out (full or paused): the gated candidates then come from the per-category scan.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.set_category_limit('stuck', 0) \g /dev/null
select queue.enqueue('{}', queue => 'a', category => 'stuck') \g /dev/null
select queue.enqueue(jsonb_build_object('n', g), queue => 'a') from generate_series(1, 30) as g
\g /dev/null
select queue.enqueue(jsonb_build_object('n', g), queue => 'b', category => 'open')
from generate_series(1, 5) as g \g /dev/null
select queue.set_category_limit('open', 100) \g /dev/null

create temp table got as select * from queue.claim('w', queues => '{a,b}', batch => 8);
select is((select count(*) from got where queue = 'b'), 4::bigint,
    'the queue enqueued last gets half the batch');
select is((select count(*) from got where category = 'stuck'), 0::bigint,
    'and the paused category none');

select * from finish();
rollback;
