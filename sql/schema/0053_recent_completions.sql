-- 0053: "did my job run?" out of the box. Run once, never edited after release (add a new
-- number instead).
--
-- queue.completions: the ids of recently completed jobs, one row per completing call (a
-- batch of 100 completions is one row, so the cost is per call, not per job), whatever the
-- queue's history setting; queue.job answers "completed" from it for an hour
-- (queue._completions_keep), and queue.maintain() deletes older rows. `span` holds the
-- lowest and highest id of the row, for the GiST index a lookup by id uses; `queues[i]` is
-- the queue of `ids[i]`.

create table queue.completions (
    ids bigint [] not null,
    queues text [] not null,
    span int8range not null,
    completed_at timestamptz not null default clock_timestamp(),
    constraint completions_shape_check check (cardinality(ids) = cardinality(queues))
);

create index completions_span_idx on queue.completions using gist (span);
-- rows arrive in time order: a BRIN index finds the expired ones at almost no write cost
create index completions_at_idx on queue.completions using brin (completed_at);

revoke all on queue.completions from public;
