-- queue.complete_many_then_claim: complete several claimed jobs and claim the next ones in
-- one call (one round trip, one commit): a worker whose slots these jobs leave sends its
-- next claim with their outcomes.
--
-- Guarantees:
-- * The completion is queue.complete_many's, unchanged: one row per input job with claimed
--   = false, job_id and completed (false where the lease was lost or an abort was
--   requested; such a job is left untouched, never raised for). A stale token gets the same
--   outcome as from queue.complete_many.
-- * The claim is queue.claim's with deadlines (worker, queues, batch, lease, deadlines =>
--   true), made after the completion, so the slots the completed jobs freed are free for it:
--   one row per leased job with claimed = true, the claim's columns and the attempt's
--   deadline (null when the job has no timeout; completed is null). The category gate, the
--   rate limits and the READ COMMITTED requirement are claim's.
-- * Both in the caller's transaction: an error in either rolls both back.
-- Rows: the completions first (in input order), then the claimed jobs (in claim order).
-- Raises: what queue.complete_many raises (22004, 22023 for the arrays) and what queue.claim
-- raises (22004, 22023 for worker, queues, batch, lease; 55000 at another isolation level).
create or replace function queue.complete_many_then_claim(
    job_ids bigint[],
    tokens uuid[],
    results jsonb[],
    worker text,
    queues text[],
    batch int,
    lease interval
) returns table (
    claimed boolean,
    job_id bigint,
    queue text,
    category text,
    priority int,
    payload jsonb,
    attempt int,
    max_attempts int,
    token uuid,
    lease_expires_at timestamptz,
    enqueued_at timestamptz,
    cache_key text,
    cache_version bigint,
    deadline timestamptz,
    completed boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
rows 20
as $$
#variable_conflict use_column
begin
    -- validated by the two functions; the claim's isolation check comes first, so a call
    -- at another level changes nothing
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.complete_many_then_claim must run at READ COMMITTED isolation '
            '(not %)', current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'Its claim is queue.claim''s: the category gate recounts running jobs '
            'after taking its lock.';
    end if;
    -- (one job: complete_many's one-job path, queue.complete's)
    return query
    select false, d.job_id, null::text, null::text, null::int, null::jsonb, null::int,
        null::int, null::uuid, null::timestamptz, null::timestamptz, null::text,
        null::bigint, null::timestamptz, d.completed
    from queue.complete_many(job_ids => complete_many_then_claim.job_ids,
        tokens => complete_many_then_claim.tokens,
        results => complete_many_then_claim.results) as d;
    return query
    select true, c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt,
        c.max_attempts, c.token, c.lease_expires_at, c.enqueued_at, c.cache_key,
        c.cache_version, c.deadline, null::boolean
    from queue._claim(complete_many_then_claim.worker, complete_many_then_claim.queues,
        complete_many_then_claim.batch, complete_many_then_claim.lease) as c;
end
$$;

comment on function queue.complete_many_then_claim(
    bigint[], uuid[], jsonb[], text, text[], int, interval
) is 'Complete several claimed jobs, then claim the next ones, in one call.';
revoke all on function queue.complete_many_then_claim(
    bigint[], uuid[], jsonb[], text, text[], int, interval
) from public;
grant execute on function queue.complete_many_then_claim(
    bigint[], uuid[], jsonb[], text, text[], int, interval
) to andal_worker, andal_admin;
