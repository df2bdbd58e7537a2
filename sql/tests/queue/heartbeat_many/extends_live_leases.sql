-- heartbeat_many extends every lease it still holds and returns null for the others, in
-- input order, without raising.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue_many(array_fill('{}'::jsonb, array[3])) \g /dev/null
create temp table c as select * from queue.claim('w', batch => 3);
select job_id as lost from c order by job_id limit 1 \gset
select andal_test.expire(:lost) \g /dev/null

select clock_timestamp() as before \gset
create temp table h as select * from queue.heartbeat_many(
    (select array_agg(job_id order by job_id desc) from c),
    (select array_agg(token order by job_id desc) from c),
    extend => interval '5 minutes');
select clock_timestamp() as after \gset
select results_eq(
    $$ select job_id, lease_expires_at is null from h $$,
    $$ select job_id, job_id = $$ || :lost || $$ from c order by job_id desc $$,
    'new expiry per held lease, null for the lost one, in input order');
select is((select count(*) from queue.jobs as j join h on h.job_id = j.id
           where j.lease_expires_at = h.lease_expires_at
             and h.lease_expires_at between :'before'::timestamptz + interval '5 minutes'
                 and :'after'::timestamptz + interval '5 minutes'),
    2::bigint, 'the held leases are extended to the current time + extend');
select is((select lease_expires_at from queue.jobs where id = :lost),
    now() - interval '1 second', 'the lost one is not revived');

select * from finish();
rollback;
