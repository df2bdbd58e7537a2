-- PL/Proxy's cluster configuration, read from andal_router.partitions: the cluster 'andal'.
-- The version grows with every change of the partitions (a trigger), so PL/Proxy reloads
-- the connect strings on its next call. Security definer: callers read no table.

create or replace function andal_router._bump_version() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    update andal_router.config_version set version = version + 1;
    return null;
end
$$;

drop trigger if exists partitions_changed on andal_router.partitions;
create trigger partitions_changed after insert or update or delete or truncate
on andal_router.partitions for each statement execute function andal_router._bump_version();

create or replace function plproxy.get_cluster_version(cluster_name text) returns int
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if cluster_name <> 'andal' then
        raise exception 'no PL/Proxy cluster %', cluster_name using errcode = '42704';
    end if;
    return (select v.version from andal_router.config_version as v);
end
$$;

create or replace function plproxy.get_cluster_partitions(cluster_name text) returns setof text
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if cluster_name <> 'andal' then
        raise exception 'no PL/Proxy cluster %', cluster_name using errcode = '42704';
    end if;
    return query select p.connstr from andal_router.partitions as p order by p.partition;
end
$$;

create or replace function plproxy.get_cluster_config(
    in cluster_name text, out key text, out val text
) returns setof record
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    key := 'connection_lifetime';
    val := '600';
    return next;
    key := 'disable_binary';
    val := '1';
    return next;
    -- the login role, not one taken by SET ROLE (which may not log in): `andal web` and any
    -- client that sets a role are checked as that role by the router's grants, and reach
    -- the partitions as the role they logged in with
    key := 'default_user';
    val := 'session_user';
    return next;
end
$$;

-- A changed configuration (this file re-run by an upgrade) is read by PL/Proxy's next call.
update andal_router.config_version set version = version + 1;
