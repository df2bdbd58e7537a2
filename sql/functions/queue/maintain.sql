-- Housekeeping: queue.maintain() and the rows it forgets.

-- _forget_unused: delete the queue and category rows that say nothing: a queue row equal to
-- the defaults (a missing row means the defaults), and a category of the default limit (1)
-- that no running job holds and no recent try-lock counted, made over a day ago. Names any
-- producer can make up (one statement can create thousands) so do not accumulate for ever.
-- Rows another session holds are skipped (a claim holds its category's row). Returns how
-- many rows went.
create or replace function queue._forget_unused() returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_queues bigint;
    v_categories bigint;
begin
    with gone as (
        delete from queue.queues as q
        where q.queue in (
            select d.queue from queue.queues as d
            where queue._says_nothing(d, queue._queue_defaults())  -- (queue/_policy.sql)
            for update skip locked
        )
        returning 1
    )
    select count(*) into v_queues from gone;
    with gone as (
        delete from queue.categories as c
        where c.id in (
            select d.id from queue.categories as d
            where d.max_running = 1 and d.created_at < now() - interval '1 day'
              and not exists (select from queue.worker_locks as w where w.category_id = d.id)
              and not exists (select from queue.lock_stats as s where s.category_id = d.id)
            for update skip locked
        )
        returning 1
    )
    select count(*) into v_categories from gone;
    return v_queues + v_categories;
end
$$;

-- _maintain_failed: report a housekeeping step of queue.maintain that failed (its work was
-- taken back, the other steps run): a WARNING naming the step, with the error's SQLSTATE and
-- message, to the caller and to the server's log.
create or replace function queue._maintain_failed(step text, state text, message text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    raise warning 'queue.maintain: % failed (%): %', step, state, message
        using hint = 'The other housekeeping steps ran; this one is tried again by the next '
        'queue.maintain().';
end
$$;

-- queue.maintain: periodic housekeeping any worker may run (the driver does, each minute):
-- takes back expired leases, samples the WAL position (at most once a minute) for
-- queue.stats()' WAL bytes per job, prunes counters and samples older than a day, forgets
-- queue and category rows that say nothing (queue._forget_unused), drops the workflow
-- results no child needs any more (queue._workflow_sweep), and rolls the job
-- history (drops its expired partitions, creates those needed ahead) and forgets the
-- completions older than an hour (queue._prune_completions). It also fires the due
-- ticks of every schedule and runs andal's own housekeeping schedules (queue.schedules()).
-- Each call also applies the cache writes of jobs' ends that were deferred because a
-- producer held the key (cache._apply_deferred) and forgets the watches (queue.watch) of
-- jobs that are gone.
-- Each step runs in a subtransaction of its own: a step that fails is taken back and
-- reported (queue._maintain_failed: a WARNING naming it), and the others still run, so one
-- broken setting or busy lock never stops the lease take-back or the schedules.
-- Returns the number of leases taken back. Raises 25006 in a read-only transaction.
create or replace function queue.maintain() returns int
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_reaped int := 0;
begin
    -- every step writes: refused up front, not as one warning per step
    if current_setting('transaction_read_only') = 'on' then
        perform queue._refuse_read_only('queue.maintain');
    end if;
    begin
        v_reaped := queue._reap(1000);
    exception when others then
        perform queue._maintain_failed('the take-back of expired leases', sqlstate, sqlerrm);
    end;
    begin
        perform queue._fire_due(null, 1000);
    exception when others then
        perform queue._maintain_failed('firing due schedules', sqlstate, sqlerrm);
    end;
    begin
        perform queue._run_tasks();
    exception when others then
        perform queue._maintain_failed('andal''s own schedules', sqlstate, sqlerrm);
    end;
    begin
        perform cache._apply_deferred(1000);  -- jobs' cache writes that met a producer's
        -- queue.watch's records of jobs that ended while the watch was uncommitted
        delete from queue.watches as w
        where not exists (select from queue.jobs as j where j.id = w.job_id);
    exception when others then
        perform queue._maintain_failed('deferred cache writes and watches', sqlstate, sqlerrm);
    end;
    begin
        if not exists (select from queue.wal_samples as w
                       where w.sampled_at > now() - interval '1 minute') then
            insert into queue.wal_samples (wal_lsn) values (pg_current_wal_lsn())
            on conflict do nothing;
            delete from queue.lock_stats as s where s.minute < now() - interval '1 day';
            delete from queue.stat_minutes as s where s.minute < now() - interval '1 day';
            delete from queue.wal_samples as w where w.sampled_at < now() - interval '1 day';
            perform queue._forget_unused();
            perform queue._workflow_sweep();
        end if;
    exception when others then
        perform queue._maintain_failed('pruning counters and unused names', sqlstate, sqlerrm);
    end;
    begin
        perform queue._history_roll();
        perform queue._prune_completions();
    exception when others then
        perform queue._maintain_failed('rolling the history and the recent completions',
            sqlstate, sqlerrm);
    end;
    return v_reaped;
end
$$;

comment on function queue.maintain() is 'Housekeeping: take back expired leases, prune counters.';
revoke all on function queue.maintain() from public;
revoke all on function queue._forget_unused() from public;
revoke all on function queue._maintain_failed(text, text, text) from public;
grant execute on function queue.maintain() to andal_worker, andal_admin;
