-- Jobs of a gated category never block jobs of other categories, even when they rank first:
-- a full category's jobs are passed over, and a batch is filled with other jobs (gated or
-- not) when the category has fewer free slots than it has candidates.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue_many(array_fill('{}'::jsonb, array[5]), category => 'g', priority => 10)
\g /dev/null
select queue.enqueue('{}', category => 'h', priority => 5) as h \gset
select queue.enqueue('{}', priority => 0) as plain1 \gset
select queue.enqueue('{}', priority => 0) as plain2 \gset

-- g has 1 free slot and 5 candidates ranked first: the batch takes 1 of g, then h and a
-- job of no category, in claim order.
select results_eq(
    $$ select coalesce(category, '-') from queue.claim('w1', batch => 3) $$,
    array['g', 'h', '-'],
    'one job of g (its only free slot), then the next jobs of other categories');

-- g is full now: claims with batch 1 get the other jobs, never nothing while one is ready.
select count(*) as others from queue.jobs
where status = 'pending' and category is distinct from 'g' \gset
create temp table next_claims (job_id bigint, category text);
insert into next_claims select job_id, category from queue.claim('w2');
insert into next_claims select job_id, category from queue.claim('w3');
select is((select count(*) from next_claims), least(:others, 2)::bigint,
    'a full category does not hide the jobs below it');
select is((select count(*) from next_claims where category = 'g'), 0::bigint,
    'and none of its jobs is claimed');
select is(andal_test.running('g'), 1::bigint, 'the gate held: one job of g running');

-- Only gated jobs: a category with fewer free slots than candidates does not hide another.
select queue.set_category_limit('x', 1) \g /dev/null
select queue.enqueue_many(array_fill('{}'::jsonb, array[4]), queue => 'only', category => 'x',
    priority => 9) \g /dev/null
select queue.enqueue('{}', queue => 'only', category => 'y') as y \gset
select results_eq(
    $$ select category from queue.claim('w4', queues => '{only}', batch => 2) $$,
    array['x', 'y'], 'batch 2 over gated jobs only: one of x, then y');
select is(andal_test.running('x'), 1::bigint, 'x''s limit held');

select * from finish();
rollback;
