-- queue.cancel: withdraw a pending job. It moves to queue.dead_letters with reason
-- 'cancelled' (so requeue_dead can bring it back).
-- Raises: 22004 null job_id; 42704 unknown job; 55000 the job is running (let it finish or
-- its lease expire) or already dead.
create or replace function queue.cancel(job_id bigint) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
-- by primary key whatever the (possibly stale) statistics say, as complete: a shard
-- analyzed while empty would otherwise be read whole
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_job record;  -- not queue.jobs: queue.set_shards may replace the table mid-call
begin
    if cancel.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    select j.* into v_job from queue.jobs as j where j.id = cancel.job_id for update;
    if v_job.id is null then
        if exists (select from queue.dead_letters as d where d.job_id = cancel.job_id) then
            raise exception 'job % is already dead', cancel.job_id using errcode = '55000';
        end if;
        raise exception 'job % does not exist (or has completed)', cancel.job_id
            using errcode = '42704';
    end if;
    if v_job.status = 'running' then
        raise exception 'job % is running and cannot be cancelled', cancel.job_id
            using errcode = '55000',
            hint = 'Wait for it to finish, or for its lease to expire.';
    end if;
    perform queue._bury(v_job.id, 'cancelled', 'cancelled', v_job.errors);
    if v_job.cache_key is not null then
        perform cache._job_done(v_job.cache_key, (queue._config(v_job.queue)).cache_policy,
            null, 'dead');
    end if;
end
$$;

comment on function queue.cancel(bigint) is 'Withdraw a pending job (into the dead letters).';
revoke all on function queue.cancel(bigint) from public;
grant execute on function queue.cancel(bigint) to andal_admin;
