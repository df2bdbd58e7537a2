-- How a router function reports an error: a partition that cannot be reached (PL/Proxy's
-- XX000) as AN003; an error raised on a partition with its own SQLSTATE, message, detail
-- and hint (PL/Proxy's prefix "f(n): [db] REMOTE ERROR: " taken off the message).
create or replace function andal_router._raise(
    state text, message text, detail text, hint text
) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_msg text := regexp_replace(_raise.message, '^.*?REMOTE ERROR: ', '');
    v_detail text := coalesce(_raise.detail, '');
    v_hint text := coalesce(_raise.hint, '');
begin
    if _raise.state = 'XX000' then
        raise exception 'partition unreachable: %', v_msg using errcode = 'AN003',
            hint = 'the call needs a partition the router cannot reach; calls routed to the'
                ' others go on (andal_router.partitions lists them)';
    end if;
    if v_detail = '' and v_hint = '' then
        raise exception '%', v_msg using errcode = _raise.state;
    elsif v_hint = '' then
        raise exception '%', v_msg using errcode = _raise.state, detail = v_detail;
    elsif v_detail = '' then
        raise exception '%', v_msg using errcode = _raise.state, hint = v_hint;
    end if;
    raise exception '%', v_msg using errcode = _raise.state, detail = v_detail, hint = v_hint;
end
$$;

-- andal_router._relabel: queue.metrics() text of one partition with partition="n" added to
-- every sample (so the merged exposition has no duplicate series); its # HELP and # TYPE
-- lines only when `comments` (the first partition's).
create or replace function andal_router._relabel(
    metrics text, partition int, comments boolean
) returns text
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select string_agg(
        case
            when l ~ '^#' or l = '' then case when _relabel.comments then l end
            when l ~ '^[^ {]+\{' then regexp_replace(l, '^([^ {]+)\{',
                format('\1{partition="%s",', _relabel.partition))
            else regexp_replace(l, '^([^ ]+) ', format('\1{partition="%s"} ', _relabel.partition))
        end, E'\n' order by n)
    from unnest(string_to_array(_relabel.metrics, E'\n')) with ordinality as t (l, n)
$$;

create or replace view andal_router.modes as
select
    f.function,
    f.mode,
    f.reason
from andal_router.functions as f;
comment on view andal_router.modes is
'How each public andal function is served on the router: routed by queue, id or key, split,'
' run on all partitions and merged, or local (call the partition directly), with the reason.';
