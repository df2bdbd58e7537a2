-- queue.trace_contexts: the producers' trace contexts of live jobs, for a worker that traces.
-- One row per given job id that is live and was enqueued with a trace context (queue.enqueue
-- with trace_context); jobs without one, and ids andal does not hold live, give no row. A
-- worker calls it once per claimed batch, and only while it traces: a worker that does not
-- trace never reads the column. Reads only (no lock, no write).
-- Raises: 22004 null job_ids; 22023 more than 1000 ids, or an array of more than one
-- dimension.
create or replace function queue.trace_contexts(job_ids bigint[])
returns table (job_id bigint, trace_context jsonb)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if trace_contexts.job_ids is null then
        raise exception 'job_ids must not be null' using errcode = '22004';
    end if;
    if array_ndims(trace_contexts.job_ids) > 1 then
        raise exception 'job_ids must be a one-dimensional array' using errcode = '22023';
    end if;
    if cardinality(trace_contexts.job_ids) > 1000 then
        raise exception 'job_ids holds % ids, over the limit of 1000',
            cardinality(trace_contexts.job_ids)
            using errcode = '22023';
    end if;
    return query
    select j.id, j.trace_context from queue.jobs as j
    where j.id = any (trace_contexts.job_ids) and j.trace_context is not null;
end
$$;

comment on function queue.trace_contexts(bigint[]) is
'The producers'' trace contexts of live jobs (for a worker that traces).';
revoke all on function queue.trace_contexts(bigint[]) from public;
grant execute on function queue.trace_contexts(bigint[]) to andal_worker, andal_admin;

-- queue._check_trace_context: a trace context is a JSON object of string values (a
-- propagator's carrier) of at most 4096 bytes of JSON text. Raises 22023 otherwise.
create or replace function queue._check_trace_context(trace_context jsonb) returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bytes bigint;
begin
    if jsonb_typeof(trace_context) <> 'object' then
        raise exception 'trace_context must be a JSON object, not %', jsonb_typeof(trace_context)
            using errcode = '22023';
    end if;
    -- the values' types first: a carrier of strings only prints as at most 6 times its
    -- stored size (escapes), where numbers could print as gigabytes
    if exists (
        select from jsonb_each(trace_context) as e where jsonb_typeof(e.value) <> 'string'
    ) then
        raise exception 'trace_context values must be strings (a propagator''s carrier)'
            using errcode = '22023';
    end if;
    v_bytes := octet_length(trace_context::text);
    if v_bytes > 4096 then
        raise exception 'trace_context is % bytes, over the limit of 4096', v_bytes
            using errcode = '22023';
    end if;
end
$$;

revoke all on function queue._check_trace_context(jsonb) from public;
