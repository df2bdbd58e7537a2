-- queue.watch: ask to be told when a job ends. Sets the live job's `watched` flag: when it
-- completes, dies or is cancelled, a NOTIFY andal_done (payload: the job id) is sent in the
-- same transaction. Jobs nobody watches cost nothing (no notification). Returns true when
-- the job is live (a notification will follow), false when andal knows it as finished
-- already or does not know it: read queue.job then. LISTEN andal_done before calling it,
-- so that an end between the two is not missed; the notification is a hint (re-read
-- queue.job), and a waiter should re-read now and then anyway.
-- Raises: 22004 null job_id.
create or replace function queue.watch(job_id bigint) returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
    v_id bigint;
begin
    if watch.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    update queue.jobs as j set watched = true
    where j.id = watch.job_id and not j.watched
    returning j.id into v_id;
    return v_id is not null
        or exists (select from queue.jobs as j where j.id = watch.job_id);
end
$$;

comment on function queue.watch(bigint) is
'Ask for a NOTIFY andal_done when a job ends; true when it is still live.';
revoke all on function queue.watch(bigint) from public;
grant execute on function queue.watch(bigint) to andal_producer, andal_worker, andal_admin;
