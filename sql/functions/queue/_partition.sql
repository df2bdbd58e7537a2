-- Job ids that carry their partition, for the PL/Proxy router (`andal router install`, see
-- docs/scaling.md): partition k of n numbers its jobs k, k + n, k + 2n, ... (every new id
-- is = k mod n), so the router sends complete, fail, heartbeat, cancel, job, ... to
-- partition (id % n) with no lookup. Dead letters and history keep the job's id, so every
-- id of a job stays on its partition's residue. Private (granted to nobody): the installer
-- runs them as the database's owner.

-- queue._set_partition: make this database partition k of n. The identity sequence of
-- queue.jobs steps by n and restarts at the smallest value = k (mod n) above every id in
-- use (live jobs, dead letters, history, the sequence itself), so no id is ever reused.
-- Idempotent: run again with the same k and n, it changes nothing. Returns the next id.
-- Raises: 22004 null k or n; 22023 n not a power of two (1 .. 2^20) or k outside [0, n);
-- 55000 live jobs whose ids belong to another partition (move or finish them first).
create or replace function queue._set_partition(k int, n int)
returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_seq text := pg_get_serial_sequence('queue.jobs', 'id');
    v_max bigint;
    v_next bigint;
    v_now record;
    v_used bigint;
begin
    if k is null or n is null then
        raise exception 'queue._set_partition: k and n must not be null'
            using errcode = '22004';
    end if;
    if n < 1 or n > 1048576 or (n & (n - 1)) <> 0 then
        raise exception 'queue._set_partition: the partition count must be a power of two, got %',
            n using errcode = '22023', hint = 'PL/Proxy hashes with (hash & (n - 1)): use 1, 2, 4, 8, ...';
    end if;
    if k < 0 or k >= n then
        raise exception 'queue._set_partition: partition % is outside [0, %)', k, n
            using errcode = '22023';
    end if;
    lock table queue.jobs in share row exclusive mode;  -- no id drawn while we renumber
    if exists (select from queue.jobs as j where j.id % n <> k) then
        raise exception 'queue._set_partition: live jobs have ids of another partition than % of %',
            k, n using errcode = '55000',
            hint = 'finish or move those jobs first; the router routes a job id to partition id % n';
    end if;
    select s.seqincrement as increment_by into v_now from pg_sequence as s
    where s.seqrelid = v_seq::regclass;
    execute format('select last_value - (not is_called)::int from %s', v_seq) into v_used;
    v_max := greatest(
        (select max(j.id) from queue.jobs as j),
        (select max(d.job_id) from queue.dead_letters as d),
        (select max(h.job_id) from queue.history as h),
        v_used, 0);
    v_next := v_max + 1 + ((k - (v_max + 1) % n) % n + n) % n;
    if v_now.increment_by = n and obj_description(v_seq::regclass, 'pg_class')
        = format('andal partition %s of %s', k, n) then
        return v_next;  -- already so: nothing to change
    end if;
    execute format('alter sequence %s increment by %s restart with %s', v_seq, n, v_next);
    execute format('comment on sequence %s is %L', v_seq, format('andal partition %s of %s', k, n));
    return v_next;
end
$$;

-- queue._partition: this database's partition (k, n), or nulls when _set_partition never ran.
create or replace function queue._partition(out k int, out n int)
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select m[1]::int, m[2]::int
    from (select regexp_match(
        obj_description(pg_get_serial_sequence('queue.jobs', 'id')::regclass, 'pg_class'),
        '^andal partition (\d+) of (\d+)$') as m) as d
$$;

comment on function queue._set_partition(int, int) is
'Make this database partition k of n for the router: job ids = k (mod n) from now on.';
comment on function queue._partition() is
'This database''s router partition (k, n), or nulls.';
revoke all on function queue._set_partition(int, int) from public;
revoke all on function queue._partition() from public;
