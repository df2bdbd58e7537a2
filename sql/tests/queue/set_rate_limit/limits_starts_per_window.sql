-- A category with a rate limit starts at most `starts` jobs per window of `per`, whatever
-- its concurrency limit allows; claims held back are counted (lock_stats, queue.stats()),
-- other jobs are still claimed, and the window moves on with time. null, null removes it.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.set_category_limit('api', 100);
select queue.set_rate_limit('api', 3, '1 hour');
select count(queue.enqueue('{}', queue => 'q', category => 'api'))
from generate_series(1, 10) \g /dev/null

select is((select count(*) from queue.claim('w1', queues => '{q}', batch => 10)), 3::bigint,
    'three starts in the window, of ten ready');
select queue.enqueue('{}', queue => 'q', priority => -1) \g /dev/null
select is((select count(*) from queue.claim('w2', queues => '{q}', batch => 10)), 1::bigint,
    'the window is full: a second claim gets only the ungated job');
select is((select count(*) from queue.claim('w3', batch => 10)), 0::bigint,
    'a claim of every queue gets none either');
select is((select cardinality(rate_log) from queue.categories where category = 'api'), 3,
    'the category''s row holds the three start times');
select ok((select sum(rate_refusals) >= 2 from queue.lock_stats), 'refusals are counted');
select is((select rate_refusals from queue.stats() where queue = 'q' and category = 'api'),
    (select sum(rate_refusals)::bigint from queue.lock_stats), 'queue.stats() shows them');

-- the starts leave the window (the test's clock does not move: age them; the claim reads
-- the current time, and an hour's window leaves a slow machine a wide margin)
update queue.categories set rate_log = array[clock_timestamp() - interval '2 hours',
    clock_timestamp() - interval '2 hours', clock_timestamp() - interval '1 minute']
where category = 'api';
select is((select count(*) from queue.claim('w4', queues => '{q}', batch => 10)), 2::bigint,
    'two starts that left the window make room for two');
select is((select cardinality(rate_log) from queue.categories where category = 'api'), 3,
    'the window keeps only the latest three start times');

select queue.set_rate_limit('api', null, null);
select is((select count(*) from queue.claim('w5', queues => '{q}', batch => 10)), 5::bigint,
    'without the limit the rest is claimed');
select throws_ok($$select queue.set_rate_limit('api', 0, '1 second')$$, '22023', null,
    'starts must be positive');

select * from finish();
rollback;
