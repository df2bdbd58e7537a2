-- queue.watch: ask to be told when a job ends. Records the live job in queue.watches: when it
-- completes, dies or is cancelled, a NOTIFY andal_done (payload: the job id) is sent in the
-- same transaction. It never writes or locks the job's row, so a watch inside a long
-- statement or transaction delays no worker (claim, heartbeat, complete); the price is that
-- an end committed while the watch is still uncommitted sends nothing (re-read queue.job
-- after the watch's transaction commits, as below). Jobs nobody watches cost nothing (no notification). Returns true when
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
    -- only for a live job (so the table holds no more rows than there are live jobs); a
    -- plain read of queue.jobs and an insert into queue.watches: no lock a worker waits on
    insert into queue.watches as w (job_id)
    select j.id from queue.jobs as j where j.id = watch.job_id
    on conflict (job_id) do nothing
    returning w.job_id into v_id;
    return v_id is not null
        or exists (select from queue.jobs as j where j.id = watch.job_id);
end
$$;

comment on function queue.watch(bigint) is
'Ask for a NOTIFY andal_done when a job ends; true when it is still live.';
revoke all on function queue.watch(bigint) from public;
grant execute on function queue.watch(bigint) to andal_producer, andal_worker, andal_admin;
