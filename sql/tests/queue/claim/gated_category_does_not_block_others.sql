-- Jobs of a gated category never block jobs of other categories, even when they rank first:
-- a full category's jobs are passed over, and a batch is filled with other jobs when the
-- category has fewer free slots than it has candidates.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue_many(array_fill('{}'::jsonb, array[5]), category => 'g', priority => 10)
\g /dev/null
select queue.enqueue('{}', category => 'h', priority => 0) as h \gset
select queue.enqueue('{}', priority => 0) as plain1 \gset
select queue.enqueue('{}', priority => 0) as plain2 \gset

-- g has 1 free slot and 5 candidates ranked first: the batch takes 1 of g, then the others.
create temp table first_claim as select * from queue.claim('w1', batch => 3);
select is((select count(*) from first_claim where category = 'g'), 1::bigint,
    'one job of the gated category (its only free slot)');
select is((select count(*) from first_claim), 3::bigint,
    'the rest of the batch is filled with jobs of other categories');

-- g is full now: claims with batch 1 get the other jobs, never nothing while one is ready.
select count(*) as others from queue.jobs
where status = 'pending' and category is distinct from 'g' \gset
create temp table next_claims (job_id bigint, category text);
insert into next_claims select job_id, category from queue.claim('w2');
insert into next_claims select job_id, category from queue.claim('w3');
insert into next_claims select job_id, category from queue.claim('w4');
select is((select count(*) from next_claims), least(:others, 3)::bigint,
    'a full category does not hide the jobs below it');
select is((select count(*) from next_claims where category = 'g'), 0::bigint,
    'and none of its jobs is claimed');
select is(andal_test.running('g'), 1::bigint, 'the gate held: one job of g running');

select * from finish();
rollback;
