-- cache.changes_since: the writes and invalidations a reader has not seen yet; every row
-- carries the watermark the reader may resume from.
--
-- Why not a log sequence number: sequence order is not commit order. A change can draw a
-- lower seq and commit after a higher one was read; a reader resuming from the highest seq
-- it saw would skip it. Positions are transaction ids (xid8) instead:
-- * X = the xmin of the reading snapshot: every transaction with an id below X has ended, so
--   every log row below X that will ever exist is visible; a change that commits later
--   belongs to a transaction whose id is >= X. The watermark (a bigint) is such an X.
-- * Watermark mode (snapshot null): returns every visible row with xid >= watermark, in
--   (xid, seq) order, at most `lim`. Rows of transactions at or above X that already
--   committed are included (a change is delivered as soon as it is visible) and will be
--   delivered again until X passes them (applying a change twice is harmless). Each row's
--   watermark is least(X, the next row's xid), never below the given one; after the last row
--   of a complete answer it is X. Resuming from any row's watermark never skips a change.
-- * Snapshot mode (snapshot = the `snapshot` column of the reader's previous answer): returns
--   only the rows that were not visible in that snapshot and are now - rows of transactions
--   still running then (its xip list) or begun after it (>= its xmax) - found by index
--   lookups. Nothing is delivered twice, and a long-running or idle-in-transaction writer
--   anywhere in the cluster, which holds X back, costs one index probe per sweep instead of
--   re-reading everything since it began. Resume with the snapshot and watermark of the last
--   row of a complete answer. (A null snapshot means: stay in watermark mode; it is returned
--   when the caller's own transaction has an id, which a snapshot does not list as running.)
-- * Paging (both modes): pass the (xid, seq) of the last row received as after_xid/after_seq,
--   with the same watermark and snapshot, to get the next page. Resume afterwards from the
--   FIRST page's last row (a later page can not vouch for rows an earlier page passed before
--   they committed); at worst a few rows are delivered twice.
-- * With no change to report, one row with op 'watermark' carries the position.
-- * One row with op 'flush' (version = the current epoch) tells the reader to drop its whole
--   local cache and resume from that row's watermark and snapshot: when `epoch` is null (a
--   new reader) or not the current epoch (a crash emptied the UNLOGGED shared cache), or when
--   the log was pruned at or past the watermark (the reader may have missed a change).
-- Columns (type cache.change): seq (the change's number), key, version (the key's version
-- after the change: equal to seq), op ('put' | 'invalidate' | 'watermark' | 'flush'),
-- watermark, xid (the writer's transaction id), snapshot.
-- Raises: 22023 negative watermark or after_xid, lim outside 1..100000.
create or replace function cache.changes_since(
    watermark bigint, epoch bigint default null, lim int default 10000,
    after_xid bigint default null, after_seq bigint default null,
    snapshot pg_snapshot default null
) returns setof cache.change
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_epoch bigint;
    v_snap pg_snapshot := pg_current_snapshot();
    v_pruned xid8;
    v_w xid8;
    v_after xid8;
    v_prev_xmax xid8;
    v_prev_xip xid8[];
begin
    perform cache._primary_only('cache.changes_since');
    if changes_since.watermark < 0 then
        raise exception 'watermark must not be negative (got %)', changes_since.watermark
            using errcode = '22023';
    end if;
    if changes_since.after_xid < 0 then
        raise exception 'after_xid must not be negative (got %)', changes_since.after_xid
            using errcode = '22023';
    end if;
    if changes_since.lim is null or changes_since.lim < 1 or changes_since.lim > 100000 then
        raise exception 'lim must be between 1 and 100000 (got %)', changes_since.lim
            using errcode = '22023';
    end if;
    v_epoch := cache._epoch();
    select l.pruned_xid into v_pruned from cache.log_state as l;
    v_w := changes_since.watermark::text::xid8;

    if changes_since.epoch is distinct from v_epoch or changes_since.watermark is null
        or v_w <= v_pruned or v_w > pg_snapshot_xmax(v_snap) then
        -- Every transaction at or below the cut had ended when it was made (cache.prune
        -- only cuts below the xmin of its snapshot), so resuming above it skips nothing.
        return query select null::bigint, null::text, v_epoch, 'flush'::text,
            greatest(pg_snapshot_xmin(v_snap), (v_pruned::text::bigint + 1)::text::xid8)
                ::text::bigint,
            null::bigint,
            case when pg_current_xact_id_if_assigned() is null then v_snap end;
        return;
    end if;

    v_after := changes_since.after_xid::text::xid8;
    if changes_since.snapshot is not null then
        v_prev_xmax := pg_snapshot_xmax(changes_since.snapshot);
        v_prev_xip := array(select pg_snapshot_xip(changes_since.snapshot));
    end if;

    -- One statement: the rows and the snapshot (and X) they were read with. A snapshot taken
    -- in a transaction that has an id does not list that transaction as running although
    -- its rows may still commit: none is returned then (the reader stays in watermark mode).
    return query
    with s as (
        select pg_current_snapshot() as snap,
            pg_snapshot_xmin(pg_current_snapshot()) as x,
            pg_current_xact_id_if_assigned() is null as clean
    ),
    l as (
        -- Two index scans: the transactions the previous snapshot saw running (snapshot
        -- mode), and everything from its xmax on (or from the watermark).
        select u.seq, u.key, u.op, u.xid
        from (
            select l.seq, l.key, l.op, l.xid from cache.log as l
            where l.xid = any (v_prev_xip) and l.xid >= v_w
            union all
            select l.seq, l.key, l.op, l.xid from cache.log as l
            where l.xid >= greatest(v_w, coalesce(v_prev_xmax, v_w))
        ) as u
        where v_after is null
           or (u.xid, u.seq) > (v_after, coalesce(changes_since.after_seq, 0))
        order by u.xid, u.seq
        limit changes_since.lim + 1
    ),
    r as (
        select l.seq, l.key, l.op, l.xid,
            row_number() over (order by l.xid, l.seq) as rn,
            lead(l.xid) over (order by l.xid, l.seq) as next_xid
        from l
    )
    select r.seq, r.key, r.seq, coalesce(r.op, 'watermark'),
        greatest(v_w, least(s.x, coalesce(r.next_xid, s.x)))::text::bigint,
        r.xid::text::bigint,
        case when s.clean then s.snap end
    from s left join r on r.rn <= changes_since.lim
    order by r.rn;
end
$$;

comment on function cache.changes_since(bigint, bigint, int, bigint, bigint, pg_snapshot) is
'Log rows after a transaction-id watermark (or snapshot), each with the position to resume from.';
revoke all on function cache.changes_since(bigint, bigint, int, bigint, bigint, pg_snapshot)
from public;
grant execute on function cache.changes_since(bigint, bigint, int, bigint, bigint, pg_snapshot)
to andal_worker, andal_admin;
