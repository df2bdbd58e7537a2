-- The record of recent completions (queue.completions, migration 0053): queue.complete and
-- queue.complete_many add one row per call; queue.job reads it; queue.maintain() prunes it.

-- _completions_keep: how long a completion stays answerable by queue.job without history.
create or replace function queue._completions_keep() returns interval
language sql immutable
set search_path = pg_catalog, pg_temp
as $$ select interval '1 hour' $$;

-- _record_completions: one row for the jobs one call completed (ids[i] of queues[i]; span:
-- their lowest and highest id). PL/pgSQL, so its insert is planned once per session (a SQL
-- function that cannot be inlined is planned at every call: 10 times the cost at batch 100).
create or replace function queue._record_completions(
    ids bigint[], queues text[], span int8range, completed_at timestamptz
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into queue.completions (ids, queues, span, completed_at)
    values (_record_completions.ids, _record_completions.queues, _record_completions.span,
        _record_completions.completed_at);
end
$$;

-- _prune_completions: delete the rows older than _completions_keep; returns how many went.
-- Through the BRIN index (the rows are in time order): only the expired block ranges are
-- read, whatever the statistics say.
create or replace function queue._prune_completions() returns int
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_n int;
begin
    delete from queue.completions as c
    where c.completed_at < now() - queue._completions_keep();
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

comment on function queue._completions_keep() is
'Private: how long queue.job answers for a completed job of a queue without history.';
comment on function queue._record_completions(bigint[], text[], int8range, timestamptz) is
'Private: record the jobs one call completed (queue.completions).';
comment on function queue._prune_completions() is
'Private: delete expired rows of queue.completions.';
revoke all on function queue._completions_keep() from public;
revoke all on function queue._record_completions(bigint[], text[], int8range, timestamptz) from public;
revoke all on function queue._prune_completions() from public;
