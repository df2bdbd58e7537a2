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
set enable_seqscan = off
set jit = off
rows 10
as $$
#variable_conflict use_column
declare
    v_row record;
begin
    if claim.deadlines is null then
        raise exception 'deadlines must not be null' using errcode = '22004';
    end if;
    -- the claim's result is complete before the first row is read here (a set-returning
    -- PL/pgSQL function), so each lookup below sees the claimed row
    for v_row in
        select c.* from queue.claim(worker => claim.worker, queues => claim.queues,
            batch => claim.batch, lease => claim.lease) as c
    loop
        job_id := v_row.job_id;
        queue := v_row.queue;
        category := v_row.category;
        priority := v_row.priority;
        payload := v_row.payload;
        attempt := v_row.attempt;
        max_attempts := v_row.max_attempts;
        token := v_row.token;
        lease_expires_at := v_row.lease_expires_at;
        enqueued_at := v_row.enqueued_at;
        cache_key := v_row.cache_key;
        cache_version := v_row.cache_version;
        deadline := null;
        if claim.deadlines then
            select j.claimed_at + j.timeout into deadline from queue.jobs as j
            where j.id = v_row.job_id and j.queue = v_row.queue;
        end if;
        return next;
    end loop;
end
$$;

comment on function queue.claim(text, text[], int, interval, boolean) is
'queue.claim, each job with its attempt''s deadline (claim time + timeout).';
revoke all on function queue.claim(text, text[], int, interval, boolean) from public;
grant execute on function queue.claim(text, text[], int, interval, boolean)
to andal_worker, andal_admin;
