-- 0040: what queue.dead_letters_by returns: one dead letter as a dashboard lists it (no
-- payload). Run once, never edited after release (add a new number instead).
create type queue.dead_letter_info as (
    job_id bigint,
    queue text,
    category text,
    reason text,
    attempts int,
    max_attempts int,
    enqueued_at timestamptz,
    died_at timestamptz,
    last_error text
);
