-- Dead letters by filter, for operators and dashboards: purge or requeue every dead letter
-- matching a queue, a reason and an age, a bounded number per call.

-- _dead_matching: the ids of at most max_rows dead letters matching every filter given
-- (queue; reason: exhausted, non_retryable or cancelled; died more than older_than ago;
-- null: any), oldest first, locked for the caller's transaction; rows another transaction
-- holds are skipped (never waited for).
-- Raises: 22004 null max_rows; 22023 max_rows outside 1..10000, an unknown reason, a bad
-- queue name, a negative older_than.
create or replace function queue._dead_matching(
    queue_name text, reason_name text, older_than interval, max_rows int
) returns bigint []
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids bigint[];
begin
    perform queue._check_name(queue_name, 'queue', false);
    perform queue._check_interval(older_than, 'older_than', required => false);
    if max_rows is null then
        raise exception 'max_rows must not be null' using errcode = '22004';
    end if;
    if max_rows < 1 or max_rows > 10000 then
        raise exception 'max_rows must be 1 to 10000 (got %)', max_rows
            using errcode = '22023', hint = 'Call again for the next ones.';
    end if;
    if reason_name is not null and reason_name not in ('exhausted', 'non_retryable', 'cancelled')
    then
        raise exception 'reason must be exhausted, non_retryable or cancelled (got %)',
            reason_name using errcode = '22023';
    end if;
    select array_agg(m.job_id order by m.died_at, m.job_id) into v_ids
    from (
        select d.job_id, d.died_at
        from queue.dead_letters as d
        where (queue_name is null or d.queue = queue_name)
            and (reason_name is null or d.reason = reason_name)
            and (older_than is null or d.died_at < now() - older_than)
        order by d.died_at, d.job_id
        limit max_rows
        for update skip locked
    ) as m;
    return coalesce(v_ids, '{}');
end
$$;

-- queue.purge_dead_matching: delete at most max_rows dead letters matching every filter
-- given (queue, reason, died more than older_than ago; null: any), oldest first; returns
-- how many. Dead letters another transaction holds (being requeued, purged) are skipped.
-- To purge more, call again until it returns 0.
-- Raises: 22004 null max_rows; 22023 max_rows outside 1..10000, unknown reason, bad queue
-- name, negative older_than.
create or replace function queue.purge_dead_matching(
    queue text default null,
    reason text default null,
    older_than interval default null,
    max_rows int default 1000
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids bigint[] := queue._dead_matching(
        purge_dead_matching.queue, purge_dead_matching.reason, purge_dead_matching.older_than,
        purge_dead_matching.max_rows
    );
    v_count bigint;
begin
    delete from queue.dead_letters as d where d.job_id = any (v_ids);
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

-- queue.requeue_dead_matching: requeue (as queue.requeue_dead) at most max_rows dead letters
-- matching every filter given, oldest first. One refused by requeue_dead (a live job holds
-- its dedup key) stays dead and is counted in refused; the others are requeued. Returns
-- (requeued, refused). To requeue more, call again until requeued is 0.
-- Raises: as queue.purge_dead_matching.
create or replace function queue.requeue_dead_matching(
    queue text default null,
    reason text default null,
    older_than interval default null,
    max_rows int default 1000
) returns table (requeued bigint, refused bigint)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids bigint[] := queue._dead_matching(
        requeue_dead_matching.queue, requeue_dead_matching.reason,
        requeue_dead_matching.older_than, requeue_dead_matching.max_rows
    );
    v_id bigint;
begin
    requeued := 0;
    refused := 0;
    foreach v_id in array v_ids loop
        begin
            perform queue.requeue_dead(job_id => v_id);
            requeued := requeued + 1;
        exception when sqlstate '55000' then
            refused := refused + 1;
        end;
    end loop;
    return next;
end
$$;

comment on function queue.purge_dead_matching(text, text, interval, int) is
'Delete at most max_rows dead letters matching queue, reason and age; returns how many.';
comment on function queue.requeue_dead_matching(text, text, interval, int) is
'Requeue at most max_rows dead letters matching queue, reason and age.';
revoke all on function queue._dead_matching(text, text, interval, int) from public;
revoke all on function queue.purge_dead_matching(text, text, interval, int) from public;
revoke all on function queue.requeue_dead_matching(text, text, interval, int) from public;
grant execute on function queue.purge_dead_matching(text, text, interval, int) to andal_admin;
grant execute on function queue.requeue_dead_matching(text, text, interval, int) to andal_admin;
