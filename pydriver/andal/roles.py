"""The install's roles: which names they get, and whether another database shares them.

PostgreSQL's roles are cluster-wide: a member granted ``andal_worker`` for one database is a
worker in every database that granted andal's functions to ``andal_worker``. So each install
has a role prefix, recorded in ``queue.install_state.role_prefix``; its roles are
``<prefix>_producer``, ``_worker``, ``_admin`` and ``_monitor``.

A new install takes the prefix it is given; without one, ``andal`` when no other database of
the cluster uses the ``andal_*`` roles, else one derived from the database's name
(:func:`derived_prefix`), so two databases never share roles unless asked to. An existing
install keeps its recorded prefix; another one is refused (55000) before anything is written.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable

import psycopg
import psycopg.sql

#: SQLSTATE of an install with ``exclusive_roles`` whose roles hold grants in another database.
ROLES_SHARED = "55006"
#: The role names in the SQL sources, replaced by ``<role_prefix>_...`` at install.
ROLE_NAMES = re.compile(r"\bandal_(producer|worker|admin|monitor)\b")
ROLE_PREFIX = re.compile(r"[a-z][a-z0-9_]{0,47}")
#: The prefix of a database that is the only andal install of its cluster.
DEFAULT_PREFIX = "andal"
KINDS = ("producer", "worker", "admin", "monitor")

#: The other databases of the cluster in which any of the roles holds a grant or owns
#: something (pg_shdepend; a grant on a database itself is recorded with dbid 0).
SHARED_ROLES = """
select coalesce(array_agg(distinct d.datname order by d.datname), '{}')
from pg_catalog.pg_shdepend as s
join pg_catalog.pg_roles as r on r.oid = s.refobjid
join pg_catalog.pg_database as d on d.oid = case
    when s.dbid = 0 and s.classid = 'pg_catalog.pg_database'::regclass then s.objid
    else s.dbid end
where s.refclassid = 'pg_catalog.pg_authid'::regclass
  and r.rolname = any(%(roles)s::text[])
  and d.datname <> current_database()
"""


def role_names(prefix: str) -> list[str]:
    return [f"{prefix}_{kind}" for kind in KINDS]


def derived_prefix(database: str) -> str:
    """``andal_<database>``: the name lower-cased, each run of other characters than letters
    and digits made one ``_``, cut to 34 characters; when that changed the name (so two
    databases could meet), a ``_`` and 6 hex digits of its SHA-256 follow. Always matches
    ``ROLE_PREFIX``, so ``<prefix>_producer`` fits in a role name."""
    slug = re.sub(r"[^a-z0-9]+", "_", database.lower()).strip("_")
    cut = slug[:34].rstrip("_")
    if cut != database or not cut:
        cut = f"{cut}_{hashlib.sha256(database.encode()).hexdigest()[:6]}".lstrip("_")
    return f"{DEFAULT_PREFIX}_{cut}"


def shared_role_databases(conn: psycopg.Connection, prefix: str) -> list[str]:
    """The other databases of the cluster where the install's roles hold grants."""
    row = conn.execute(SHARED_ROLES, {"roles": role_names(prefix)}).fetchone()
    return list(row[0]) if row else []


def choose_prefix(conn: psycopg.Connection, recorded: str | None, wanted: str | None) -> str:
    """The install's role prefix: the recorded one (another ``wanted`` is refused with 55000),
    else ``wanted``, else ``andal`` when no other database uses those roles, else the one
    derived from this database's name. Nothing is written."""
    if recorded and wanted and wanted != recorded:
        conn.execute(
            psycopg.sql.SQL(
                "do $$ begin raise exception 'andal is installed here with role prefix %',"
                " {r} using errcode = '55000', hint = 'Install with role prefix ' || {r}"
                " || ' (or none), or into another database.'; end $$"
            ).format(r=psycopg.sql.Literal(recorded))
        )
    chosen = recorded or wanted
    if chosen:
        return chosen
    if not shared_role_databases(conn, DEFAULT_PREFIX):
        return DEFAULT_PREFIX
    row = conn.execute("select current_database()").fetchone()
    return derived_prefix(row[0] if row else "")


def check_shared(
    conn: psycopg.Connection, prefix: str, exclusive: bool, warn: Callable[[str], None]
) -> None:
    """When the roles hold grants in another database: ``warn``, or with ``exclusive``
    refuse with 55006. Nothing is written."""
    others = shared_role_databases(conn, prefix)
    if not others:
        return
    names = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    what = (
        f"the roles {prefix}_producer, _worker, _admin and _monitor also hold grants in"
        f" database(s) {names}: a role granted them for one of these databases works in all"
    )
    fix = (
        "Install each application's database with a role prefix of its own (--role-prefix,"
        " or none: a new install then takes one derived from its database; docs/multi-db.md)"
    )
    if exclusive:
        refuse(conn, ROLES_SHARED, what, fix + ".")
    warn(f"warning: {what}. {fix}, or pass --exclusive-roles to refuse such an install.")


#: Role attributes that would make an adopted role more than andal's grants: a member of it
#: would be a superuser, could make roles or databases, replicate, or read past row security.
POWERFUL = """
select string_agg(format('%%s (%%s)', r.rolname, array_to_string(array_remove(array[
        case when r.rolsuper then 'SUPERUSER' end, case when r.rolcreaterole then 'CREATEROLE' end,
        case when r.rolcreatedb then 'CREATEDB' end,
        case when r.rolreplication then 'REPLICATION' end,
        case when r.rolbypassrls then 'BYPASSRLS' end], null), ' ')), ', ' order by r.rolname)
from pg_catalog.pg_roles as r
where r.rolname = any(%(roles)s::text[])
  and (r.rolsuper or r.rolcreaterole or r.rolcreatedb or r.rolreplication or r.rolbypassrls)
"""


def check_attributes(conn: psycopg.Connection, prefix: str) -> None:
    """Refuse (55000) to adopt an existing role of the install's names that holds more than
    andal grants it (SUPERUSER, CREATEROLE, CREATEDB, REPLICATION, BYPASSRLS): every member
    granted it for andal would hold that too. Nothing is written."""
    row = conn.execute(POWERFUL, {"roles": role_names(prefix)}).fetchone()
    if not row or not row[0]:
        return
    refuse(
        conn,
        "55000",
        f"the existing role(s) {row[0]} hold attributes andal's roles must not have: their"
        " members would hold them too",
        "Remove them (alter role ... nosuperuser nocreaterole nocreatedb noreplication"
        " nobypassrls), or install with another --role-prefix.",
    )


def refuse(conn: psycopg.Connection, sqlstate: str, message: str, hint: str) -> None:
    """Raise a server error with ``sqlstate``, ``message`` and ``hint`` (so a refusal of the
    installer reads as any other andal error). The texts travel as parameters: a database or
    role name may hold any character."""
    conn.execute(
        "select set_config('andal.refusal', %s, false), set_config('andal.fix', %s, false)",
        (message, hint),
    )
    conn.execute(
        "do $$ begin raise exception '%', current_setting('andal.refusal')"
        f" using errcode = '{sqlstate}', hint = current_setting('andal.fix'); end $$"
    )


def missing_roles(conn: psycopg.Connection, prefix: str) -> list[str]:
    """The install's roles that do not exist in the cluster (a database restored into a new
    cluster: a dump carries no roles)."""
    names = role_names(prefix)
    rows = conn.execute("select rolname from pg_catalog.pg_roles where rolname = any(%s)", (names,))
    present = {r[0] for r in rows}
    return [n for n in names if n not in present]


def create_roles(conn: psycopg.Connection, names: list[str]) -> None:
    """Create the install's roles ``names`` (NOLOGIN, as the first install did); 42501 with
    the fix when the installing role may not."""
    try:
        with conn.transaction():
            for name in names:
                conn.execute(
                    psycopg.sql.SQL("create role {} nologin").format(psycopg.sql.Identifier(name))
                )
    except psycopg.errors.InsufficientPrivilege:
        listed = ", ".join(names)
        refuse(conn, "42501", f"andal needs the roles {listed} and may not create them",
               f"Have a superuser run: create role <name> nologin (for each of {listed}), or"
               " grant CREATEROLE to the installing role.")  # fmt: skip


def warn_stderr(message: str) -> None:
    print(f"andal install: {message}", file=sys.stderr, flush=True)


def with_roles(text: str, prefix: str) -> str:
    """The SQL source with the install's role names."""
    if prefix == DEFAULT_PREFIX:
        return text
    return ROLE_NAMES.sub(lambda m: f"{prefix}_{m.group(1)}", text)
