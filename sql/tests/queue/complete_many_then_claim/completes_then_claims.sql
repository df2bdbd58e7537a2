-- complete_many_then_claim completes as complete_many does (a stale token: completed false,
-- its job untouched), then claims as claim does, after the completions: the category slot a
-- completed job frees is taken by the claim of the same call.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.enqueue('{"n": 1}', queue => 'q', category => 'c') as a \gset
select queue.enqueue('{"n": 2}', queue => 'q', category => 'c') as b \gset
select queue.enqueue('{"n": 3}', queue => 'q') as u \gset
create temp table first as select * from queue.claim('w', queues => '{q}', batch => 3);
select is((select count(*) from first), 2::bigint,
    'category limit 1: one gated and the ungated job are claimed');
select job_id as held, token as held_token from first where category = 'c' \gset
select job_id as other, token as other_token from first where category is null \gset
select andal_test.expire(:other) \g /dev/null

create temp table r as
select * from queue.complete_many_then_claim(
    job_ids => array[:held, :other]::bigint[],
    tokens => array[:'held_token', :'other_token']::uuid[], results => null,
    worker => 'w', queues => '{q}', batch => 5, lease => null);

select results_eq(
    $$ select job_id, completed from r where not claimed $$,
    $$ values ($$ || :held || $$::bigint, true), ($$ || :other || $$::bigint, false) $$,
    'one row per completion in input order; the expired lease: completed false');
select ok(not exists (select from queue.jobs where id = :held), 'the held job is completed');
select is((select count(*) from r where claimed and category = 'c'), 1::bigint,
    'the claim takes the slot the completion freed');
select is((select job_id from r where claimed and category = 'c'), case when :held = :a
    then :b else :a end::bigint, 'and it is the other job of the category');
select ok((select bool_and(token is not null and lease_expires_at > now() and completed is null)
           from r where claimed), 'claimed rows carry a token and a lease');
select is((select count(*) from r where claimed), 2::bigint,
    'the job whose lease expired is taken back and claimed again with it');

select * from finish();
rollback;
