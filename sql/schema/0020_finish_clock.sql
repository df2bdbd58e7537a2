-- 0020: a finished job's times are on the clock its claim used, and its history rows are in a
-- total order. Run once, never edited after release (add a new number instead).
--
-- * queue.history.finished_at, queue.dead_letters.died_at and queue.results.completed_at
--   default to clock_timestamp(), the time of the write, as a claim's claimed_at is: with
--   now() (the transaction's start) a job claimed, run and completed in one transaction read
--   as finished before it started.
-- * queue.history.finished_seq: a number drawn when the row is written, so a job's newest
--   history row is the one with the highest number, also when two rows of it are written in
--   one transaction (dead, requeued, claimed and completed): rows written before this
--   migration have none and are older than any that has one.

alter table queue.history alter column finished_at set default clock_timestamp();
alter table queue.dead_letters alter column died_at set default clock_timestamp();
alter table queue.results alter column completed_at set default clock_timestamp();

create sequence queue.history_finished_seq as bigint;
alter table queue.history add column finished_seq bigint;
alter table queue.history
alter column finished_seq set default nextval('queue.history_finished_seq');
revoke all on sequence queue.history_finished_seq from public;
