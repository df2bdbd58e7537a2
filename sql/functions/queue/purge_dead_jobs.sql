-- queue.purge_dead_jobs: delete the dead letters with the given ids (one, or a selection an
-- operator made); ids that are not dead letters (live, unknown, already purged) are skipped.
-- Returns how many were deleted. At most 10000 ids per call.
-- Raises: 22004 null job_ids or a null id in it; 22023 more than 10000 ids.
create or replace function queue.purge_dead_jobs(job_ids bigint []) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_count bigint;
begin
    if purge_dead_jobs.job_ids is null or array_position(purge_dead_jobs.job_ids, null) is not null
    then
        raise exception 'job_ids must not be null nor hold a null' using errcode = '22004';
    end if;
    if cardinality(purge_dead_jobs.job_ids) > 10000 then
        raise exception 'at most 10000 job_ids per call (got %)',
            cardinality(purge_dead_jobs.job_ids)
            using errcode = '22023', hint = 'Purge in batches of 10000.';
    end if;
    delete from queue.dead_letters as d where d.job_id = any (purge_dead_jobs.job_ids);
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

comment on function queue.purge_dead_jobs(bigint []) is
'Delete the dead letters with the given ids; returns how many.';
revoke all on function queue.purge_dead_jobs(bigint []) from public;
grant execute on function queue.purge_dead_jobs(bigint []) to andal_admin;
