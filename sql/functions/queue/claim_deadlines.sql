-- queue.claim with deadlines: exactly queue.claim(worker, queues, batch, lease), and each
-- row also carries `deadline`, the time by which the attempt must end (claim time + the
-- job's timeout; null when the job has no timeout). A driver cancels or flags its handler
-- at the deadline: at that time the lease ends (heartbeats cannot extend it), the token is
-- fenced (complete, fail, heartbeat raise AN001) and the attempt fails with reason timeout
-- when the lease is taken back. No argument has a default, so every call of the four
-- argument form resolves as before; deadlines => false returns null deadlines.
-- Raises as queue.claim; 22004 null deadlines.
create or replace function queue.claim(
    worker text,
    queues text[],
    batch int,
    lease interval,
    deadlines boolean
) returns table (
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
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
rows 10
as $$
#variable_conflict use_column
begin
    if claim.deadlines is null then
        raise exception 'deadlines must not be null' using errcode = '22004';
    end if;
    return query
    select c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt, c.max_attempts,
        c.token, c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version,
        case when claim.deadlines then c.deadline end
    from queue._claim(claim.worker, claim.queues, claim.batch, claim.lease) as c;
end
$$;

comment on function queue.claim(text, text[], int, interval, boolean) is
'queue.claim, each job with its attempt''s deadline (claim time + timeout).';
revoke all on function queue.claim(text, text[], int, interval, boolean) from public;
grant execute on function queue.claim(text, text[], int, interval, boolean)
to andal_worker, andal_admin;
