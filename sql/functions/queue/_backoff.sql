-- The retry delay of a failed attempt. Private: granted to nobody.

-- _backoff: the delay before the next attempt after `attempt` failed attempts, by queue policy.
-- linear: backoff_base * attempt (the seed's attempt * 5 s); exponential: backoff_base *
-- 2^(attempt-1). Both capped at backoff_cap, then reduced by up to `jitter` (a fraction).
create or replace function queue._backoff(cfg queue.queues, attempt int) returns interval
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    v_delay interval;
    v_secs numeric;
begin
    -- In seconds, capped before it becomes an interval: base * 2^40 (or * attempt) of a
    -- large base would overflow the interval range.
    if cfg.backoff = 'exponential' then
        v_secs := extract(epoch from cfg.backoff_base)
            * power(2::numeric, least(greatest(attempt, 1) - 1, 40));
    else
        v_secs := extract(epoch from cfg.backoff_base) * greatest(attempt, 1);
    end if;
    v_delay := case when v_secs >= extract(epoch from cfg.backoff_cap) then cfg.backoff_cap
        else make_interval(secs => v_secs::double precision) end;
    if cfg.jitter > 0 then
        v_delay := v_delay * (1 - cfg.jitter * random());
    end if;
    return v_delay;
end
$$;
revoke all on function queue._backoff(queue.queues, int) from public;
