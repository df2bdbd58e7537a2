-- 0015: a watch no longer writes the job's row. Run once, never edited after release (add a
-- new number instead).
--
-- * queue.watches: one row per watched live job (queue.watch inserts it). A job's end
--   (complete, complete_many, the dead letters) deletes its row and sends NOTIFY
--   andal_done. queue.watch used to set queue.jobs.watched, a row lock a producer held for
--   as long as its statement or transaction ran, which made claims skip the job and
--   completions and heartbeats wait; the column stays, read as before for jobs flagged
--   before this migration.

create table queue.watches (
    job_id bigint primary key,
    since timestamptz not null default now()
);

revoke all on queue.watches from public;
