-- heartbeat extends the lease to now() + extend (default: the queue's lease) and returns the
-- new expiry; the job stays claimed by the same token.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.configure_queue('default', lease => interval '2 minutes') \g /dev/null
select queue.enqueue('{}') as j \gset
select token as t from queue.claim('w', lease => interval '10 seconds') \gset

select is(queue.heartbeat(:j, :'t', extend => interval '3 minutes'),
    now() + interval '3 minutes', 'returns now() + extend');
select is((select lease_expires_at from queue.jobs where id = :j),
    now() + interval '3 minutes', 'the lease is extended');
select is(queue.heartbeat(:j, :'t'), now() + interval '2 minutes',
    'without extend: the queue''s lease');
select is((select row(status, token)::text from queue.jobs where id = :j),
    row('running', :'t'::uuid)::text, 'still running under the same token');

select * from finish();
rollback;
