-- Job history with retention: queue.set_history, queue.configure_history, and the private
-- queue._history_roll (run by queue.maintain) and queue._history_keep.
--
-- A queue with a history retention (queue.set_history) keeps each finished job (completed,
-- dead, cancelled) in queue.history for that long, so queue.job answers after the live row
-- is gone. queue.history is partitioned by range of keep_until (finish time + the queue's
-- retention then): a partition holds rows that expire together, and once its range has
-- passed every row in it has expired and the whole partition is dropped (no DELETE, no
-- bloat). Partitions are created ahead, up to the longest retention plus two partition
-- widths; a row no partition covers (housekeeping stopped for longer than that) waits in
-- the default partition and is moved when its partition is made.

-- _history_keep: how long a queue keeps history (null: it keeps none).
create or replace function queue._history_keep(queue_name text) returns interval
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select q.history_retention from queue.queues as q where q.queue = queue_name
$$;

-- _history_completed: keep completed jobs in queue.history (jobs: a JSON array of objects
-- with the job's job_id, queue, category, priority, payload, attempt, max_attempts,
-- enqueued_at, started_at, worker, result and errors; each of a queue that keeps history),
-- finished at finished_at and kept for their queue's retention. Used by queue.complete and
-- queue.complete_many.
create or replace function queue._history_completed(jobs jsonb, finished_at timestamptz)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into queue.history (
        job_id, queue, category, priority, state, payload, attempt, max_attempts,
        enqueued_at, started_at, finished_at, worker, result, errors, keep_until
    )
    select h.job_id, h.queue, h.category, h.priority, 'completed', h.payload, h.attempt,
        h.max_attempts, h.enqueued_at, h.started_at, _history_completed.finished_at, h.worker,
        h.result, h.errors, _history_completed.finished_at + queue._history_keep(h.queue)
    from jsonb_to_recordset(_history_completed.jobs) as h (
        job_id bigint, queue text, category text, priority int, payload jsonb,
        attempt int, max_attempts int, enqueued_at timestamptz, started_at timestamptz,
        worker text, result jsonb, errors jsonb
    );
end
$$;

-- _history_roll: drop the partitions of queue.history whose range has passed, delete expired
-- rows of the default partition, and create the partitions the retentions need ahead.
-- Serialised by a row lock on queue.history_settings (a second caller returns at once), and
-- every DDL gives up after lock_timeout rather than making completions wait: what it could
-- not do now is done by a later call. Returns the number of partitions dropped.
create or replace function queue._history_roll() returns int
language plpgsql
set search_path = pg_catalog, pg_temp
set lock_timeout = '200ms'
set datestyle = 'ISO, YMD'
set timezone = 'UTC'
as $$
declare
    v_width interval;
    v_longest interval;
    v_part record;
    v_dropped int := 0;
    v_lo timestamptz;
    v_hi timestamptz;
    v_name text;
begin
    -- nothing kept and nothing to drop (the usual install): no lock, no write
    if not exists (select from queue.queues as q where q.history_retention is not null)
        and not exists (select from pg_inherits as i
                        where i.inhparent = 'queue.history'::regclass
                          and i.inhrelid <> 'queue.history_default'::regclass)
        and not exists (select from queue.history_default) then
        return 0;
    end if;
    insert into queue.history_settings as s (id) values (true) on conflict (id) do nothing;
    select s.partition_width into v_width from queue.history_settings as s
    where s.id for update skip locked;
    if v_width is null then
        return 0;  -- another session is rolling
    end if;

    for v_part in
        select format('%I.%I', n.nspname, c.relname) as name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                'TO \(''([^'']+)''\)'))[1]::timestamptz as hi
        from pg_inherits as i
        join pg_class as c on c.oid = i.inhrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where i.inhparent = 'queue.history'::regclass
          and pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
        order by 2
    loop
        exit when v_part.hi > now();
        begin
            execute format('drop table %s', v_part.name);
            v_dropped := v_dropped + 1;
        exception when lock_not_available or object_in_use then
            exit;  -- busy (another session, or a query of this one still reads it): next time
        end;
    end loop;
    delete from queue.history_default as d where d.keep_until <= now();

    select max(q.history_retention) into v_longest from queue.queues as q;
    if v_longest is null then
        return v_dropped;
    end if;
    -- partitions at least partition_width wide, and never more than about 50 ahead; as a
    -- length of time (date_bin cannot bin by months: '5 years' / 48 is '1 mon 7 days 12:00',
    -- and a width of months stored before configure_history refused them becomes 30 days)
    v_width := greatest(make_interval(secs => extract(epoch from v_width)),
        date_trunc('second', make_interval(secs => extract(epoch from v_longest) / 48)));
    select max((regexp_match(pg_get_expr(c.relpartbound, c.oid),
            'TO \(''([^'']+)''\)'))[1]::timestamptz)
    into v_lo
    from pg_inherits as i
    join pg_class as c on c.oid = i.inhrelid
    where i.inhparent = 'queue.history'::regclass
      and pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT';
    v_lo := greatest(coalesce(v_lo, '-infinity'), date_bin(v_width, now(), 'epoch'));
    while v_lo < now() + v_longest + 2 * v_width loop
        v_hi := v_lo + v_width;
        v_name := 'history_' || to_char(v_lo, 'YYYYMMDD"T"HH24MISS');
        begin
            execute format('create table queue.%I (like queue.history including defaults '
                'including constraints)', v_name);
            execute format('alter table queue.%I add constraint %I check '
                '(keep_until >= %L and keep_until < %L)', v_name, v_name || '_range', v_lo, v_hi);
            -- rows that waited in the default partition for this range move first
            execute format('with moved as (delete from queue.history_default as d '
                'where d.keep_until >= %L and d.keep_until < %L returning d.*) '
                'insert into queue.%I select * from moved', v_lo, v_hi, v_name);
            execute format('alter table queue.history attach partition queue.%I '
                'for values from (%L) to (%L)', v_name, v_lo, v_hi);
            execute format('alter table queue.%I drop constraint %I', v_name, v_name || '_range');
            execute format('revoke all on queue.%I from public', v_name);
        exception when lock_not_available then
            exit;  -- busy: next time (the subtransaction took the half-made table back)
        end;
        v_lo := v_hi;
    end loop;
    return v_dropped;
end
$$;

-- queue.set_history: keep a queue's finished jobs (completed, dead, cancelled) for
-- `retention` (null: keep none, the default), so that queue.job answers for them. Applies to
-- jobs that finish from now on; rows already kept keep their expiry. Creates the partitions
-- the retention needs at once. The cost: one row written per finished job.
-- Raises: 22004 null queue; 22023 bad queue name, retention <= 0.
create or replace function queue.set_history(queue text, retention interval) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(set_history.queue, 'queue');
    perform queue._check_interval(set_history.retention, 'retention', true, false);
    perform queue._config(set_history.queue);
    update queue.queues as q
    set history_retention = set_history.retention, updated_at = now()
    where q.queue = set_history.queue;
    perform queue._history_roll();
end
$$;

-- queue.configure_history: how wide new history partitions are (at least one second; they are
-- made wider when the longest retention would need more than about 50). A row is kept
-- between its retention and its retention plus one width. Existing partitions keep theirs.
-- The width is a length of time: months and years are refused (their length varies, and
-- partitions are laid out on fixed boundaries): '30 days', not '1 mon'.
-- Raises: 22004 null; 22023 width under one second, over 1000 years, or with months.
create or replace function queue.configure_history(partition_width interval) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_interval(configure_history.partition_width, 'partition_width', true);
    if extract(month from configure_history.partition_width) <> 0
        or extract(year from configure_history.partition_width) <> 0 then
        raise exception 'partition_width must be a length of time without months or years '
            '(got %)', configure_history.partition_width
            using errcode = '22023',
            hint = 'Give it in days, hours, minutes or seconds, such as ''30 days''.';
    end if;
    if configure_history.partition_width < interval '1 second' then
        raise exception 'partition_width must be at least 1 second (got %)',
            configure_history.partition_width using errcode = '22023';
    end if;
    insert into queue.history_settings as s (id, partition_width)
    values (true, configure_history.partition_width)
    on conflict (id) do update
    set partition_width = excluded.partition_width, updated_at = now();
end
$$;

comment on function queue._history_keep(text) is 'Private: a queue''s history retention.';
comment on function queue._history_roll() is
'Private: drop passed history partitions, create those needed ahead.';
comment on function queue.set_history(text, interval) is
'Keep a queue''s finished jobs for retention (null: none), for queue.job.';
comment on function queue.configure_history(interval) is
'The width of new history partitions.';
revoke all on function queue._history_keep(text) from public;
revoke all on function queue._history_roll() from public;
revoke all on function queue._history_completed(jsonb, timestamptz) from public;
revoke all on function queue.set_history(text, interval) from public;
revoke all on function queue.configure_history(interval) from public;
grant execute on function queue.set_history(text, interval) to andal_admin;
grant execute on function queue.configure_history(interval) to andal_admin;
