-- configure_queue creates a queue's policy with the defaults, sets what it is given and keeps
-- what it is not; it returns the resulting row.
begin;
\ir ../_fixtures.psql
select plan(5);

select is(
    (select row(max_attempts, lease, backoff, backoff_base, backoff_cap, jitter, notify,
                payload_limit, keep_results, cache_policy)::text
     from queue.configure_queue('q')),
    row(5, interval '60 s', 'linear', interval '5 s', interval '1 hour', 0::real, true,
        1048576, false, 'invalidate')::text,
    'a new queue gets the defaults (linear attempt * 5 s backoff, 1 MiB payloads)');
select is(
    (select row(max_attempts, lease, backoff, backoff_base, backoff_cap, jitter, notify,
                payload_limit, keep_results)::text
     from queue.configure_queue('q', max_attempts => 3, lease => interval '2 min',
        backoff => 'exponential', backoff_base => interval '1 s', backoff_cap => interval '30 s',
        jitter => 0.25, notify => false, payload_limit => 4096, keep_results => true)),
    row(3, interval '2 min', 'exponential', interval '1 s', interval '30 s', 0.25::real, false,
        4096, true)::text,
    'every given value is set');
select is(
    (select row(max_attempts, lease, backoff, notify)::text
     from queue.configure_queue('q', max_attempts => 8)),
    row(8, interval '2 min', 'exponential', false)::text,
    'null arguments keep the current values');
select is((select count(*) from queue.queues where queue = 'q'), 1::bigint, 'one row per queue');
select queue.enqueue('{}', queue => 'q') as j \gset
select is((select max_attempts from queue.jobs where id = :j), 8,
    'new jobs of the queue take its max_attempts');

select * from finish();
rollback;
