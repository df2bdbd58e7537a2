-- A page of dead letters by filter, for operators and dashboards.

-- queue.dead_letters_by: dead letters matching every filter given (queue; reason:
-- exhausted, non_retryable or cancelled; null: any), newest id first, one page at a time:
-- pass the last job_id of a page as `before` for the next. No payload; the last error cut
-- at 2000 characters. For operators and dashboards (andal web's Dead letters page).
-- Raises: 22023 unknown reason, bad queue name, lim outside 1..1000.
create or replace function queue.dead_letters_by(
    queue text default null,
    reason text default null,
    before bigint default null,
    lim int default 50
) returns setof queue.dead_letter_info
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(dead_letters_by.queue, 'queue', false);
    if dead_letters_by.reason is not null
        and dead_letters_by.reason not in ('exhausted', 'non_retryable', 'cancelled') then
        raise exception 'reason must be exhausted, non_retryable or cancelled (got %)',
            dead_letters_by.reason using errcode = '22023';
    end if;
    if dead_letters_by.lim is null or dead_letters_by.lim not between 1 and 1000 then
        raise exception 'lim must be between 1 and 1000 (got %)', dead_letters_by.lim
            using errcode = '22023';
    end if;
    return query
    select d.job_id, d.queue, d.category, d.reason, d.attempt, d.max_attempts, d.enqueued_at,
        d.died_at, left(d.last_error, 2000)
    from queue.dead_letters as d
    where (dead_letters_by.queue is null or d.queue = dead_letters_by.queue)
        and (dead_letters_by.reason is null or d.reason = dead_letters_by.reason)
        and (dead_letters_by.before is null or d.job_id < dead_letters_by.before)
    order by d.job_id desc
    limit dead_letters_by.lim;
end
$$;

comment on function queue.dead_letters_by(text, text, bigint, int) is
'A page of dead letters by queue and reason, newest first, without payloads.';
revoke all on function queue.dead_letters_by(text, text, bigint, int) from public;
grant execute on function queue.dead_letters_by(text, text, bigint, int)
to andal_admin, andal_monitor;
