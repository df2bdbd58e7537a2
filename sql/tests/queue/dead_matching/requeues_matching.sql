-- requeue_dead_matching requeues the matching dead letters (as requeue_dead: pending, a fresh
-- attempt count), counts one a live job's dedup key blocks as refused and leaves it dead.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}', queue => 'ra') as a1 \gset
select queue.enqueue('{}', queue => 'ra', dedup_key => 'k') as a2 \gset
select queue.enqueue('{}', queue => 'rb') as b1 \gset
select queue.cancel(:a1) \g /dev/null
select queue.cancel(:a2) \g /dev/null
select queue.cancel(:b1) \g /dev/null
select queue.enqueue('{}', queue => 'ra', dedup_key => 'k') as holder \gset

select results_eq($$ select requeued, refused from queue.requeue_dead_matching(queue => 'ra') $$,
    $$ values (1::bigint, 1::bigint) $$, 'one requeued, one refused (its dedup key is held)');
select results_eq(format('select status::text, attempt from queue.jobs where id = %s', :a1),
    $$ values ('pending', 0) $$, 'the requeued one is pending with a fresh attempt count');
select results_eq($$ select job_id from queue.dead_letters order by job_id $$,
    format('values (%s::bigint), (%s::bigint)', :a2, :b1), 'the refused one and rb stay dead');
select results_eq(
    $$ select requeued, refused from queue.requeue_dead_matching(reason => 'cancelled',
       max_rows => 1) $$,
    $$ values (0::bigint, 1::bigint) $$, 'at most max_rows (the oldest: the refused one)');
select results_eq(
    $$ select requeued, refused from queue.requeue_dead_matching(queue => 'rb') $$,
    $$ values (1::bigint, 0::bigint) $$, 'by queue');

select * from finish();
rollback;
