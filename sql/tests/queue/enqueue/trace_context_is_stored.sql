-- enqueue with trace_context stores the producer's carrier with the job, and
-- queue.trace_contexts gives it back for live jobs; a job enqueued without one stores null
-- and gives no row. The new form funnels into the same body (dedup, timeout, options).
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{}', trace_context => '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "k=v"}',
    queue => 'tc', priority => 3, dedup_key => 'd') as traced \gset
select queue.enqueue('{}', queue => 'tc') as plain \gset

select is((select trace_context ->> 'traceparent' from queue.jobs where id = :traced),
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'the carrier is stored');
select is((select trace_context from queue.jobs where id = :plain), null,
    'without trace_context nothing is stored');
select results_eq(
    format('select job_id, trace_context ->> %L from queue.trace_contexts(array[%s, %s, 0])',
        'tracestate', :traced, :plain),
    format('values (%s::bigint, %L::text)', :traced, 'k=v'),
    'trace_contexts: one row, for the traced live job only');
select is((select priority from queue.jobs where id = :traced), 3, 'the options are kept');
select is(queue.enqueue('{}', trace_context => '{}', queue => 'tc', dedup_key => 'd'),
    :traced::bigint, 'the dedup key is honoured');
select queue.enqueue('{}', trace_context => '{}', queue => 'tc', timeout => '5 minutes')
    as timed \gset
select is((select timeout from queue.jobs where id = :timed), '5 minutes'::interval,
    'a timeout is taken');
select is((select count(*) from queue.trace_contexts('{}'::bigint[])), 0::bigint,
    'no ids: no rows');
select is(
    (select count(*) from pg_proc where oid = 'queue._enqueue'::regproc),
    1::bigint, 'one private body');

select * from finish();
rollback;
