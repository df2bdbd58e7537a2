-- queue.release: give a claimed job back without spending an attempt (for example a worker
-- shutting down before it started the job). The job is pending again after `delay`; its gate
-- slot is freed; claimers are notified when it is ready at once.
-- A job whose abort was requested (queue.cancel while it ran) is not given back: it ends
-- cancelled, as with queue.fail.
-- Its slot and hint go through queue._settle; the lease is checked on the database's
-- current time (queue._lease_clock), after the job's row is locked: a release racing a
-- queue.cancel ends the job cancelled when the cancel committed first, and the cancel's
-- abort request (queue.cancel waits for the release) finds the job pending and buries it
-- when the release committed first; never pending with the abort lost.
-- Raises: 22004 null job_id or token; 22023 negative delay; AN001 lease lost.
create or replace function queue.release(job_id bigint, token uuid, delay interval default '0')
returns void
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
    v_job record;
begin
    if release.job_id is null or release.token is null then
        raise exception 'job_id and token must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(release.delay, 'delay', bound => 'delay');
    -- The row first, as queue.fail: a cancel committed while this call waited for it is
    -- seen (the decision and the write read the same row version), so an abort request is
    -- never lost to a concurrent release.
    select j.* into v_job from queue.jobs as j where j.id = release.job_id for update;
    if v_job.id is null or v_job.status <> 'running' or v_job.token <> release.token
        or v_job.lease_expires_at <= queue._lease_clock() then
        perform queue._lease_lost(release.job_id, release.token);
    end if;
    if v_job.abort_requested_at is not null then
        perform queue.fail(release.job_id, release.token, 'aborted: released');
        return;
    end if;
    update queue.jobs as j
    set status = 'pending', attempt = greatest(j.attempt - 1, 0), token = null, worker = null,
        claimed_at = null, lease_expires_at = null, available_at = now() + release.delay
    where j.id = v_job.id
    returning j.* into v_job;
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'released', null, null,
        ready_at => v_job.available_at);
end
$$;

comment on function queue.release(bigint, uuid, interval) is
'Give a claimed job back without spending an attempt.';
revoke all on function queue.release(bigint, uuid, interval) from public;
grant execute on function queue.release(bigint, uuid, interval) to andal_worker, andal_admin;
