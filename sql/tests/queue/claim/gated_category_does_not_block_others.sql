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

-- g is full now: claims with batch 1 still get the other jobs.
create temp table next_claims (job_id bigint);
insert into next_claims select job_id from queue.claim('w2');
insert into next_claims select job_id from queue.claim('w3');
insert into next_claims select job_id from queue.claim('w4');
select is((select count(*) from next_claims), 2::bigint,
    'a full category does not hide the jobs below it');
select is(andal_test.running('g'), 1::bigint, 'the gate held: one job of g running');
select is((select count(*) from queue.jobs where status = 'pending'), 4::bigint,
    'only the 4 other g jobs are still pending');

select * from finish();
rollback;
