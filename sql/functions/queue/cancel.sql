-- queue.cancel: withdraw a job.
-- A pending job (scheduled, ready, or failed awaiting its retry) moves to queue.dead_letters
-- at once with reason 'cancelled' (so requeue_dead can bring it back).
-- A running job gets an abort request: abort_requested_at is set, its worker is told on
-- channel andal_abort (payload {"job_id", "worker"}) and by its heartbeats, and its lease is
-- no longer extended. The job ends cancelled, never retried, when the worker ends the attempt
-- (queue.fail or queue.release) or its lease runs out; until then it holds its category
-- slot, and its worker's queue.complete gets AN001 (lease lost). Asking again changes
-- nothing. A cancel racing a queue.requeue_dead of the job waits for it: the job is then
-- cancelled as the live job it became (or, when the requeue rolled back, is still dead).
-- Raises: 22004 null job_id; 42704 unknown job; 55000 the job is already dead.
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
    v_job record;
begin
    if cancel.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    select j.* into v_job from queue.jobs as j where j.id = cancel.job_id for update;
    if v_job.id is null then
        -- Its dead letter locked: a queue.requeue_dead in flight (it deletes the dead letter
        -- and inserts the job) is waited for; when it commits, the job is live again and is
        -- cancelled as such, never answered with a stale "already dead".
        perform from queue.dead_letters as d where d.job_id = cancel.job_id for update;
        if found then
            raise exception 'job % is already dead', cancel.job_id using errcode = '55000';
        end if;
        select j.* into v_job from queue.jobs as j where j.id = cancel.job_id for update;
    end if;
    if v_job.id is null then
        raise exception 'job % does not exist (or has completed)', cancel.job_id
            using errcode = '42704';
    end if;
    if v_job.status = 'running' then
        if v_job.abort_requested_at is null then
            update queue.jobs as j set abort_requested_at = now() where j.id = v_job.id;
            perform queue._notify('andal_abort',
                json_build_object('job_id', v_job.id, 'worker', v_job.worker)::text, '{}');
        end if;
        return;
    end if;
    perform queue._bury(v_job.id, 'cancelled', 'cancelled', v_job.errors);
    perform queue._settle(v_job.id, v_job.queue, v_job.category, 'cancelled', null, null,
        v_job.cache_key);
end
$$;

comment on function queue.cancel(bigint) is
'Withdraw a pending job (into the dead letters), or ask a running job''s worker to stop it.';
revoke all on function queue.cancel(bigint) from public;
grant execute on function queue.cancel(bigint) to andal_admin;
