-- 0045: the sessions that sleep on a queue, so a producer sends the wake-up hint only when one
-- of them waits for it (a NOTIFY makes its transaction commit alone: without this, every
-- enqueue lost group commit). Run once, never edited after release (add a new number instead).
--
-- * queue.sleepers: one row per session and queue key (queue._hint_key; 0: every queue) of a
--   session that uses queue.idle / queue.busy; sleeping: between its queue.idle and its
--   queue.busy; pid: the session's backend (a row whose backend ended is deleted by the next
--   queue.idle of any session). Unlogged: it describes live sessions only, so it needs no WAL
--   and a crash may empty it (every listener announces itself again before it next sleeps).
--   Read by queue._hint_wanted, written by queue.idle and queue.busy only.

create unlogged table queue.sleepers (
    key int not null,
    pid int not null,
    sleeping boolean not null,
    primary key (key, pid)
);

revoke all on queue.sleepers from public;
