-- queue.stats_by_minute: per queue and minute of the last `span` (the current minute
-- included), the attempts that ended: completed, retried (failed, retry scheduled) and dead.
-- Every minute of the span is a row, zeros included, for every queue with an ended attempt in
-- the span; failure_rate is (retried + dead) / ended, null in a minute with none (as in
-- queue.stats()). For charts of throughput and failure rate. Reads the per-minute counters that
-- queue.stats() reads, which queue.maintain() keeps for a day.
-- Raises: 22004 null span; 22023 a span that is not positive or longer than 1 day.
create or replace function queue.stats_by_minute(span interval default '1 hour')
returns table (
    queue text, minute timestamptz, completed bigint, retried bigint, dead bigint,
    failure_rate double precision
)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_from timestamptz;
begin
    perform queue._check_interval(stats_by_minute.span, 'span', true);
    if stats_by_minute.span > interval '1 day' then
        raise exception 'span must be at most 1 day (got %)', stats_by_minute.span
            using errcode = '22023', hint = 'The per-minute counters are kept for a day.';
    end if;
    v_from := date_trunc('minute', now() - stats_by_minute.span) + interval '1 minute';
    return query
    with m as (
        select s.queue, s.minute, sum(s.completed)::bigint as completed,
            sum(s.retried)::bigint as retried, sum(s.dead)::bigint as dead
        from queue.stat_minutes as s
        where s.minute >= v_from
        group by 1, 2
    )
    select q.queue, g.minute, coalesce(m.completed, 0), coalesce(m.retried, 0),
        coalesce(m.dead, 0),
        (m.retried + m.dead)::double precision / nullif(m.completed + m.retried + m.dead, 0)
    from (select distinct m.queue from m) as q
    cross join generate_series(v_from, date_trunc('minute', now()), interval '1 minute') as g (
        minute
    )
    left join m on m.queue = q.queue and m.minute = g.minute
    order by q.queue, g.minute;
end
$$;

comment on function queue.stats_by_minute(interval) is
'Per queue and minute of the last span: attempts completed, retried and dead.';
revoke all on function queue.stats_by_minute(interval) from public;
grant execute on function queue.stats_by_minute(interval) to andal_admin, andal_worker, andal_monitor;
