-- 0011: the live table's layout, declared here for both layouts. Run once, never edited
-- after release (add a new number instead).
--
-- queue.jobs becomes a table partitioned by hash (queue) whose partitions are the shards:
-- queue.jobs_p0 alone on an unsharded install, queue.jobs_p0 … queue.jobs_p<n-1> with n
-- shards. Its indexes are declared once, below, on the partitioned table: PostgreSQL creates
-- them on every partition, so changing the shard count (queue.set_shards, an admin step that
-- moves the rows to new partitions) never writes index DDL, and queue.jobs itself is never
-- replaced: functions compiled against it stay valid across a re-shard.
--
-- The primary key is (id, queue): a unique index of a partitioned table must contain the
-- partition key. Ids stay unique, drawn from the table's identity sequence.
--
-- This migration rebuilds the table it finds (a plain table, or one queue.set_shards of an
-- earlier release partitioned), keeping its shard count, every live job with its id, token,
-- lease and attempt, and the identity sequence's position. It refuses (55000) when the table
-- carries an index it does not know, rather than dropping it.

do $$
declare
    v_old oid := 'queue.jobs'::regclass;
    v_seq text := pg_get_serial_sequence('queue.jobs', 'id');
    v_unknown text;
    v_index record;
begin
    lock table queue.jobs in access exclusive mode;

    -- Indexes of the table as this migration found it, partition indexes apart: all known.
    select string_agg(c.relname, ', ') into v_unknown
    from pg_index as x
    join pg_class as c on c.oid = x.indexrelid
    where x.indrelid = v_old
      and c.relname not in (
          'jobs_pkey', 'jobs_ready_queue_idx', 'jobs_ready_idx', 'jobs_gated_queue_idx',
          'jobs_gated_idx', 'jobs_gated_pair_idx', 'jobs_lease_idx', 'jobs_dedup_idx'
      );
    if v_unknown is not null then
        raise exception 'queue.jobs has indexes this migration does not know: %', v_unknown
            using errcode = '55000',
            hint = 'Drop them, upgrade, and create them again on the partitioned queue.jobs.';
    end if;

    -- The table found, out of the way: itself, its partitions, its indexes, its sequence.
    alter table queue.jobs rename to jobs_before_0011;
    for v_index in
        select i.inhrelid::regclass::text as rel, row_number() over (order by i.inhrelid) as n
        from pg_inherits as i where i.inhparent = v_old
    loop
        execute format('alter table %s rename to %I', v_index.rel,
            'jobs_before_0011_p' || v_index.n);
    end loop;
    for v_index in
        select c.relname, x.indexrelid
        from pg_index as x
        join pg_class as c on c.oid = x.indexrelid
        where x.indrelid = v_old
           or x.indrelid in (select i.inhrelid from pg_inherits as i where i.inhparent = v_old)
    loop
        execute format('alter index queue.%I rename to %I', v_index.relname,
            'jobs_before_0011_i' || v_index.indexrelid);
    end loop;
    execute format('alter sequence %s rename to jobs_before_0011_id_seq', v_seq);
end
$$;

-- The columns are those the earlier migrations gave queue.jobs (with their defaults, checks,
-- identity and comments); partitioning, storage and indexes are this migration's.
create table queue.jobs (
    like queue.jobs_before_0011 including all excluding indexes
) partition by hash (queue);

do $$
declare
    v_shards int := (
        select greatest(count(*), 1)::int from pg_inherits
        where inhparent = 'queue.jobs_before_0011'::regclass
    );
begin
    for v_r in 0 .. v_shards - 1 loop
        execute format(
            'create table queue.%I partition of queue.jobs'
            ' for values with (modulus %s, remainder %s)'
            ' with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01,'
            ' autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0.02,'
            ' autovacuum_vacuum_cost_delay = 0)',
            'jobs_p' || v_r, v_shards, v_r);
    end loop;
end
$$;

alter table queue.jobs add constraint jobs_pkey primary key (id, queue);
-- Claim: ready jobs by priority then availability, for one queue and across queues. Ungated
-- (no category) and gated jobs are indexed apart, so a full category never makes a claimer
-- scan past its backlog to reach ungated work.
create index jobs_ready_queue_idx on queue.jobs (queue, priority desc, available_at, id)
where status = 'pending' and category is null;
create index jobs_ready_idx on queue.jobs (priority desc, available_at, id)
where status = 'pending' and category is null;
create index jobs_gated_queue_idx on queue.jobs (queue, priority desc, available_at, id)
where status = 'pending' and category is not null;
create index jobs_gated_idx on queue.jobs (priority desc, available_at, id)
where status = 'pending' and category is not null;
-- The gated candidates of one (queue, category) pair, in claim order.
create index jobs_gated_pair_idx on queue.jobs (
    (array[queue, category]), priority desc, available_at, id
) where status = 'pending' and category is not null;
-- Take back expired leases.
create index jobs_lease_idx on queue.jobs (lease_expires_at) where status = 'running';
-- One live job per (queue, dedup_key).
create unique index jobs_dedup_idx on queue.jobs (queue, dedup_key)
where dedup_key is not null;

-- The live jobs, with their ids; the new identity sequence continues the old one.
insert into queue.jobs overriding system value
select * from queue.jobs_before_0011;

do $$
declare
    v_next bigint;
begin
    select case when s.is_called then s.last_value + 1 else s.last_value end into v_next
    from queue.jobs_before_0011_id_seq as s;
    perform setval(pg_get_serial_sequence('queue.jobs', 'id'),
        greatest(v_next, (select coalesce(max(j.id), 0) + 1 from queue.jobs as j)), false);
end
$$;

drop table queue.jobs_before_0011;

revoke all on queue.jobs from public;
comment on table queue.jobs is
'Live jobs (scheduled, pending, failed awaiting retry, running), partitioned by hash (queue) '
'into its shards (one when unsharded): see queue.set_shards.';
analyze queue.jobs;
