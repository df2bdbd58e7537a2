-- 0051: the two roles of a workflow job, told apart on its row, and no write per edge when a
-- parent ends. Run once, never edited after release (add a new number instead).
--
-- * queue.jobs.has_parents: the job was enqueued with `after` (a child): its end drops its
--   edges. queue.jobs.workflow now means the job has children: its end counts them down.
--   A job with neither pays nothing at its end; a parent that is no child pays no probe of
--   the child index, a child that is no parent no probe of the parent index.
-- * queue.job_edges.open goes: a parent's end reads its edges and counts each child down
--   once, writing no edge. A child counts the live parents among its edges; a parent brought
--   back by requeue_dead (with_children) counts again for its children still waiting.

alter table queue.jobs
add column has_parents boolean not null default false;

update queue.jobs set has_parents = true
where workflow and id in (select e.child_id from queue.job_edges as e);

alter table queue.job_edges drop column open;
