"""Remove andal from a database: ``andal uninstall --yes`` (docs/cli.md).

Drops the schemas ``queue`` and ``cache`` (every job, dead letter, schedule and cache entry
with them) and the install's four roles unless another database of the cluster uses them:
then the roles stay and the answer says where they are used. One transaction: a failure
leaves andal as it was. Taken under the install lock, so it waits for a running install.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from .errors import NotInstalled
from .install import LOCK_TABLE, _recorded_prefix
from .roles import role_names, shared_role_databases

SCHEMAS = ("queue", "cache")


@dataclass
class Plan:
    """What an uninstall drops (``roles``) and keeps (``kept_roles``: used by ``elsewhere``)."""

    database: str
    prefix: str
    jobs: int
    roles: list[str] = field(default_factory=list)
    kept_roles: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)


def plan(conn: psycopg.Connection) -> Plan:
    """What ``uninstall`` would do here; ``NotInstalled`` when andal is not installed."""
    prefix = _recorded_prefix(conn)
    if prefix is None:
        raise NotInstalled("andal is not installed in this database; nothing to uninstall")
    row = conn.execute("select current_database(), (select count(*) from queue.jobs)").fetchone()
    assert row is not None
    existing = {
        r[0]
        for r in conn.execute(
            "select rolname from pg_catalog.pg_roles where rolname = any(%s)",
            (role_names(prefix),),
        )
    }
    roles = [r for r in role_names(prefix) if r in existing]
    elsewhere = shared_role_databases(conn, prefix)
    if elsewhere:
        return Plan(row[0], prefix, row[1], kept_roles=roles, elsewhere=elsewhere)
    return Plan(row[0], prefix, row[1], roles=roles)


def uninstall(dsn: str, log: Callable[[str], None] | None = None) -> Plan:
    """Remove andal from the database at ``dsn`` (see the module's docstring); returns what
    was dropped and kept."""
    log = log or (lambda _msg: None)
    with psycopg.connect(dsn, autocommit=True) as conn:
        plan(conn)  # NotInstalled before anything is locked
        return _drop(conn, log)


def _drop(conn: psycopg.Connection, log: Callable[[str], None]) -> Plan:
    with conn.transaction():
        # the install lock, in this transaction (an install holds it on a session of its own)
        conn.execute(f"lock table {LOCK_TABLE} in share update exclusive mode")
        done = plan(conn)
        for schema in SCHEMAS:
            conn.execute(sql.SQL("drop schema if exists {} cascade").format(sql.Identifier(schema)))
            log(f"dropped schema {schema}")
        for role in done.roles:
            conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
            log(f"dropped role {role}")
    return done


def describe(p: Plan) -> list[str]:
    """What ``p`` drops and keeps, as lines for a person."""
    lines = [f"database {p.database}: schemas queue and cache, with {p.jobs} live job(s)"]
    if p.roles:
        lines.append("roles " + ", ".join(p.roles))
    if p.kept_roles:
        where = ", ".join(p.elsewhere)
        lines.append(f"kept: roles {', '.join(p.kept_roles)} (they hold grants in {where})")
    return lines
