-- 0012: the producer's trace context travels with the job. Run once, never edited after
-- release (add a new number instead).
--
-- * queue.jobs.trace_context: the W3C trace context (a propagator's carrier: traceparent,
--   tracestate, ...) of the span that enqueued the job, given only by a producer that traces
--   (queue.enqueue with trace_context); null otherwise, so an untraced job stores nothing.
--   The worker reads it with queue.trace_contexts only when it traces, and links the job's
--   span to it. On a sharded queue.jobs the column reaches every partition.
-- * The private body of queue.enqueue takes it as its last parameter: its former signature
--   is dropped here (the function files re-create the body and its wrappers).

alter table queue.jobs add column trace_context jsonb;

drop function if exists queue._enqueue(
    jsonb, text, text, int, interval, int, text, text, jsonb, interval
);
