-- The router database's own state (`andal router install`, docs/scaling.md): PL/Proxy, the
-- schema andal_router with the partitions (a connect string each, never a password: PL/Proxy
-- appends user=SESSION_USER, so each login role connects to a partition as itself, with its
-- password in .pgpass or trust on the partitions' side), the queue placements that override
-- the hash, and the partition of each category. Re-runnable: nothing here drops data.
create extension if not exists plproxy;
create schema if not exists plproxy;
create schema if not exists andal_router;
revoke all on schema andal_router from public;
revoke all on schema plproxy from public;

create table if not exists andal_router.partitions (
    partition int primary key check (partition >= 0),
    -- no password (.pgpass), no user: PL/Proxy then connects as the calling role
    connstr text not null check (connstr !~* '(^|\s)(password|user)\s*=')
);
comment on table andal_router.partitions is
'The router''s partitions: number and libpq connect string (no password: use .pgpass; no'
' user: each role connects as itself).';

create table if not exists andal_router.placements (
    queue text primary key,
    partition int not null
);
comment on table andal_router.placements is
'Queues placed on a partition explicitly (else crc32(queue) % partition count).';

create table if not exists andal_router.categories (
    category text primary key,
    partition int not null
);
comment on table andal_router.categories is
'The partition of each category: that of the first queue enqueued with it.';

create table if not exists andal_router.config_version (
    id boolean primary key default true check (id),
    version int not null default 1
);
insert into andal_router.config_version (id) values (true) on conflict (id) do nothing;

create table if not exists andal_router.install_state (
    id boolean primary key default true check (id),
    digest text not null,
    installed_at timestamptz not null default now()
);

-- Which routing mode each router function has (written by the installer).
create table if not exists andal_router.functions (
    function text primary key,
    mode text not null,
    reason text not null
);
