-- queue.refusals: why a write on behalf of each (job, token) pair would be refused now: one
-- row per input pair, in input order, refused null where the token is the job's current,
-- unexpired lease. The words are queue._refusal's (sql/functions/queue/_lease.sql): gone,
-- retry_pending, pending_again, claimed_again, aborted, timed_out, expired. A worker whose
-- completion came back completed = false (queue.complete_many_then_claim) or AN001 asks
-- here what to do: aborted means end the attempt with queue.fail (the job ends cancelled);
-- every other word means discard the attempt's outcome. A pair with a null id or token
-- answers null. Read-only: runs on a hot standby.
-- Raises: 22004 null arrays; 22023 arrays of different lengths.
create or replace function queue.refusals(job_ids bigint [], tokens uuid [])
returns table (job_id bigint, refused text)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if refusals.job_ids is null or refusals.tokens is null then
        raise exception 'job_ids and tokens must not be null' using errcode = '22004';
    end if;
    if cardinality(refusals.job_ids) <> cardinality(refusals.tokens) then
        raise exception 'job_ids and tokens must have the same length' using errcode = '22023';
    end if;
    return query
    select i.id, case when i.id is not null and i.tok is not null
        then queue._refusal(i.id, i.tok) end
    from unnest(refusals.job_ids, refusals.tokens) with ordinality as i (id, tok, n)
    order by i.n;
end
$$;

comment on function queue.refusals(bigint [], uuid []) is
'Why a write on behalf of each (job, token) would be refused now (null: it would hold).';
revoke all on function queue.refusals(bigint [], uuid []) from public;
grant execute on function queue.refusals(bigint [], uuid []) to andal_worker, andal_admin;
