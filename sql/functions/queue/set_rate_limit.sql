-- queue.set_rate_limit: at most `starts` starts (claims) of jobs of a category in any window
-- of length `per`, across every worker; null for both removes the limit. Works together
-- with the category's concurrency limit (queue.set_category_limit; a new category gets 1:
-- raise it for a rate above one job at a time). The claim enforces it under the category's
-- row lock, exactly: the category's row keeps the times of its latest `starts` starts (one
-- row per category, no row per job), and a start is allowed only while fewer than `starts`
-- of them lie within the last `per`. A claim that finds the window full leaves the category
-- out and counts a refusal (queue.stats(): rate_refusals).
-- Raises: 22004 null category, or only one of starts and per null; 22023 bad name, starts
-- outside 1..10000, per <= 0 or over queue.config.max_delay.
create or replace function queue.set_rate_limit(category text, starts int, per interval)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(set_rate_limit.category, 'category');
    if (set_rate_limit.starts is null) <> (set_rate_limit.per is null) then
        raise exception 'give both starts and per, or neither (to remove the limit)'
            using errcode = '22004';
    end if;
    if set_rate_limit.starts not between 1 and 10000 then
        raise exception 'starts must be between 1 and 10000 (got %)', set_rate_limit.starts
            using errcode = '22023';
    end if;
    perform queue._check_interval(set_rate_limit.per, 'per', true, false, 'delay');
    insert into queue.categories as c (category, rate_starts, rate_per)
    values (set_rate_limit.category, set_rate_limit.starts, set_rate_limit.per)
    on conflict (category) do update
    set rate_starts = excluded.rate_starts, rate_per = excluded.rate_per,
        rate_log = case when excluded.rate_starts is null then '{}'
            else c.rate_log[1:excluded.rate_starts] end;
end
$$;

-- _rate_left: how many starts the window of a category's rate limit has left at `at`:
-- rate_starts less the recorded starts (rate_log) later than at - rate_per; null without a
-- rate limit; zero or less when the window is full. The one home of the window count: the
-- claim's gate (at its lease clock, under the category's row lock), queue.next_available
-- and queue.rate_limits use it. A loop over the array, no query: the claim calls it once
-- per rate-limited category it locks.
create or replace function queue._rate_left(
    rate_log timestamptz [], rate_starts int, rate_per interval, at timestamptz
) returns int
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_since timestamptz;
    v_at timestamptz;
    v_in int := 0;
begin
    if rate_starts is null then
        return null;
    end if;
    v_since := _rate_left.at - rate_per;
    foreach v_at in array coalesce(rate_log, '{}') loop
        if v_at > v_since then
            v_in := v_in + 1;
        end if;
    end loop;
    return rate_starts - v_in;
end
$$;

-- _rate_record: add `taken` starts at `at` to the windows of the categories (whose rows the
-- caller holds locked), keeping each row's latest rate_starts start times, newest first.
-- `at` is the claim's lease clock, the time its jobs' claimed_at get, and the claim counts
-- the window back from that same time: starts and checks are on one clock, so no window of
-- claimed_at times holds more than rate_starts starts.
drop function if exists queue._rate_record(bigint[], int[]);
create or replace function queue._rate_record(
    category_ids bigint[], taken int[], at timestamptz
)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
begin
    update queue.categories as c
    set rate_log = array(
        select t.at from (
            select x.at from unnest(c.rate_log) as x (at)
            union all
            select _rate_record.at from generate_series(1, u.n)
        ) as t
        order by t.at desc
        limit c.rate_starts)
    from unnest(category_ids, taken) as u (id, n)
    where c.id = u.id and u.n > 0 and c.rate_starts is not null;
end
$$;

comment on function queue.set_rate_limit(text, int, interval) is
'At most starts starts of a category''s jobs in any window of per (null, null: no limit).';
revoke all on function queue.set_rate_limit(text, int, interval) from public;
revoke all on function queue._rate_left(timestamptz [], int, interval, timestamptz) from public;
revoke all on function queue._rate_record(bigint[], int[], timestamptz) from public;
grant execute on function queue.set_rate_limit(text, int, interval) to andal_admin;
