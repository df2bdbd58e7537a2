-- _settle: the side effects of a job's state change, in one place (as cache._apply is the
-- cache's one write path). Called by fail, release, cancel, the take-back of expired leases
-- (queue._reap) and complete; complete_many and the set-based parts keep their set-based
-- form with the same pieces (queue._hist_bounds, queue._free_slots). Private: granted to
-- nobody.
--
-- outcome: 'completed', 'retry' (pending again, an attempt spent), 'dead' (dead-lettered),
-- 'cancelled' (dead-lettered by an abort or cancel) or 'released' (pending again, no
-- attempt spent). In order:
-- * the gate: the job's category slot is freed (queue._free_slots);
-- * statistics: an attempt that ran (claimed_at not null) and ended completed, retry or
--   dead is counted in this backend's row of the minute (queue._record);
-- * the cache: the job's cache key (when given) is invalidated or rewritten by the queue's
--   cache_policy (cache._job_done; released jobs leave it alone);
-- * the hint: when the job is claimable again now (ready_at <= now()), claimers get one on
--   andal_jobs (queue._notify_ready).
create or replace function queue._settle(
    job_id bigint, queue_name text, category_name text, outcome text,
    claimed_at timestamptz, available_at timestamptz, cache_key text default null,
    result jsonb default null, ready_at timestamptz default null
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if category_name is not null then
        perform queue._free_slots(array[job_id], array[queue_name]);
    end if;
    if claimed_at is not null and outcome in ('completed', 'retry', 'dead') then
        perform queue._record(queue_name, category_name, (outcome = 'completed')::int,
            (outcome = 'retry')::int, (outcome = 'dead')::int,
            array[date_part('epoch', queue._lease_clock() - claimed_at) * 1000],
            array[date_part('epoch', claimed_at - available_at) * 1000]);
    end if;
    if cache_key is not null and outcome <> 'released' then
        perform cache._job_done(cache_key, coalesce((queue._config(queue_name)).cache_policy,
            'invalidate'), result,
            case outcome when 'completed' then 'completed' when 'retry' then 'retry'
                else 'dead' end);
    end if;
    if ready_at is not null and ready_at <= now() then
        perform queue._notify_ready(queue_name);
    end if;
end
$$;

revoke all on function queue._settle(
    bigint, text, text, text, timestamptz, timestamptz, text, jsonb, timestamptz
) from public;
