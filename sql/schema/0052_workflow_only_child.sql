-- 0052: a parent's only child, on its row. Run once, never edited after release (add a new
-- number instead).
--
-- queue.jobs.only_child: the id of the one child of a parent that has exactly one (the
-- parents of a fan-in, the links of a chain), null otherwise. A completion counts that child
-- down from the deleted row, without reading the edges; a parent with several children (or
-- none known here: null) reads its edges (queue._workflow_ended).

alter table queue.jobs add column only_child bigint;
