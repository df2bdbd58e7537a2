-- 0016: a job's end never waits for a producer's cache write. Run once, never edited after
-- release (add a new number instead).
--
-- * cache.deferred_writes: the cache writes of jobs' ends (invalidate, or the rewrite of the
--   result) that met a key a producer was writing (cache.put, an enqueue's cache_value) in
--   a transaction still open. They are applied, in order, by queue.maintain once no such
--   transaction holds the key any more (cache._apply_deferred).

create table cache.deferred_writes (
    id bigint generated always as identity primary key,
    key text not null,
    op text not null constraint deferred_writes_op_check check (op in ('put', 'invalidate')),
    value jsonb,
    reason text not null,
    deferred_at timestamptz not null default now()
);

revoke all on cache.deferred_writes from public;
