-- heartbeat extends the lease to the current time (of the database, not the transaction's
-- start) + extend (default: the queue's lease) and returns the new expiry; the job stays
-- claimed by the same token.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.configure_queue('default', lease => interval '2 minutes') \g /dev/null
select queue.enqueue('{}') as j \gset
select token as t from queue.claim('w', lease => interval '10 seconds') \gset

select clock_timestamp() as before \gset
select queue.heartbeat(:j, :'t', extend => interval '3 minutes') as l \gset
select ok(:'l'::timestamptz between :'before'::timestamptz + interval '3 minutes'
    and clock_timestamp() + interval '3 minutes', 'returns the current time + extend');
select is((select lease_expires_at from queue.jobs where id = :j), :'l'::timestamptz,
    'the lease is extended');
select clock_timestamp() as before \gset
select ok(queue.heartbeat(:j, :'t') between :'before'::timestamptz + interval '2 minutes'
    and clock_timestamp() + interval '2 minutes', 'without extend: the queue''s lease');
select is((select row(status, token)::text from queue.jobs where id = :j),
    row('running', :'t'::uuid)::text, 'still running under the same token');

select * from finish();
rollback;
