-- claim(queues => ...) takes jobs of the given queues only; null means every queue; with
-- several queues the claim order runs across them.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{"n": "a1"}', queue => 'a', priority => 1) \g /dev/null
select queue.enqueue('{"n": "b1"}', queue => 'b', priority => 3) \g /dev/null
select queue.enqueue('{"n": "c1"}', queue => 'c', priority => 2) \g /dev/null
select queue.enqueue('{"n": "a2"}', queue => 'a', priority => 4) \g /dev/null

select results_eq($$ select payload ->> 'n' from queue.claim('w', queues => '{c}', batch => 10) $$,
    array['c1'], 'one queue: only its jobs');
select results_eq(
    $$ select payload ->> 'n' from queue.claim('w', queues => '{b,a}', batch => 2) $$,
    array['a2', 'b1'], 'several queues: the best jobs across them, in claim order');
select is_empty($$ select * from queue.claim('w', queues => '{nope}', batch => 10) $$,
    'an unknown queue has no jobs');

select queue.enqueue('{"n": "d1"}', queue => 'd', priority => 5) \g /dev/null
select queue.enqueue('{"n": "c2"}', queue => 'c', priority => 0) \g /dev/null
select results_eq($$ select payload ->> 'n' from queue.claim('w', queues => null, batch => 10) $$,
    array['d1', 'a1', 'c2'], 'queues => null: every queue');

select queue.enqueue('{"n": "e1"}', queue => 'e') \g /dev/null
select results_eq(
    $$ select payload ->> 'n' from queue.claim('w', queues => '{e,e,e}', batch => 10) $$,
    array['e1'], 'a queue named twice yields its job once');
select is((select count(*) from queue.jobs where status = 'pending'), 0::bigint,
    'every job was claimed exactly once');

select * from finish();
rollback;
