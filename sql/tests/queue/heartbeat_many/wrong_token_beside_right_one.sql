-- heartbeat_many answers each (job, token) pair on its own: a wrong token for a job is
-- reported lost (null) even when the same job's right token is in the same call.
begin;
\ir ../_fixtures.psql
select plan(2);

select queue.enqueue('{}', queue => 'hb') as job \gset
select token from queue.claim(worker => 'w', queues => '{hb}') \gset
select is(
    (select array_agg(h.lease_expires_at is not null order by h.n) from (
        select r.lease_expires_at, row_number() over () as n
        from queue.heartbeat_many(array[:job, :job]::bigint[],
            array[:'token', gen_random_uuid()]::uuid[]) as r) as h),
    array[true, false], 'the right token renews, the wrong one is lost');
select is(
    (select array_agg(h.lease_expires_at is not null order by h.n) from (
        select r.lease_expires_at, row_number() over () as n
        from queue.heartbeat_many(array[:job, :job]::bigint[],
            array[gen_random_uuid(), :'token']::uuid[]) as r) as h),
    array[false, true], 'whatever the order');

select * from finish();
rollback;
