-- 0054: the row a claim leases, declared once: what queue._claim and its parts
-- (queue._claim_direct, queue._claim_general, queue._lease_taken) return; queue.claim,
-- queue.claim(..., deadlines) and queue.complete_many_then_claim answer its columns. Run
-- once, never edited after release (add a new number instead).
create type queue.claimed as (
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
    deadline timestamptz
);
