"""Install or upgrade andal's SQL into a database.

Run-once migrations (``sql/schema/NNNN_*.sql``) are applied in order, each in its own
transaction, and recorded in ``queue.schema_migrations``. The re-runnable function definitions
(``sql/functions/**.sql``, in the order ``sql/functions/manifest.txt`` lists them) are then
re-applied in one transaction when their content changed since the last install. Concurrent
installs are serialised, so a second run changes nothing:
by a lock on ``queue.schema_migrations`` (held by a second session of the installer while it
works) once that table exists, which only its owner may take, so a role without andal's grants
cannot delay an install or an upgrade; on a database where andal is not installed yet, where
no table of andal's exists, by a session advisory lock (which any role could hold).

The install's roles are cluster-wide: when they already hold grants in another database of the
cluster, a member granted them for one database works in the other too. The install says so
(one warning line naming those databases and the fix, ``--role-prefix``), or with
``exclusive_roles`` refuses (SQLSTATE 55006) before anything is written.

``shards`` (optional) then spreads the live table ``queue.jobs`` (partitioned by hash of the
queue, see migration 0011) over that many shards, in place (``queue.set_shards``; 1:
unsharded). Left out, an install keeps the layout it has: a new install is unsharded.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from .sources import SqlNotFound, sql_dir, sql_version

#: Session advisory lock that serialises installs into a database where andal's first
#: migration has not run yet (the bytes of "andal"); later, the lock on LOCK_TABLE does.
INSTALL_LOCK = 0x616E64616C
#: Locked by the installer's second session while it works: SHARE UPDATE EXCLUSIVE conflicts
#: with itself but not with the inserts into the table, and needs a privilege on the table
#: (UPDATE, DELETE or TRUNCATE) that only its owner has. No migration may alter this table.
LOCK_TABLE = "queue.schema_migrations"
#: SQLSTATE of an install with ``exclusive_roles`` whose roles hold grants in another database.
ROLES_SHARED = "55006"
#: The role names in the SQL sources, replaced by ``<role_prefix>_...`` at install.
ROLE_NAMES = re.compile(r"\bandal_(producer|worker|admin|monitor)\b")
ROLE_PREFIX = re.compile(r"[a-z][a-z0-9_]{0,47}")

__all__ = ["SqlNotFound", "install", "main", "sql_dir", "sql_version"]


def migrations(root: Path | None = None) -> list[tuple[str, Path]]:
    root = root or sql_dir()
    return [(p.name.split("_", 1)[0], p) for p in sorted((root / "schema").glob("*.sql"))]


#: The ordered list of the function files, relative to ``sql/functions``.
MANIFEST = "manifest.txt"


class ManifestError(SqlNotFound):
    """``sql/functions/manifest.txt`` does not list exactly the function files there are."""


def manifest(root: Path | None = None) -> list[str]:
    """The paths ``sql/functions/manifest.txt`` lists, in order (comments and blank lines
    left out)."""
    text = ((root or sql_dir()) / "functions" / MANIFEST).read_text()
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def function_files(root: Path | None = None) -> list[Path]:
    """The function files in the order the manifest gives. Raises ``ManifestError`` when a
    ``.sql`` file is not listed, a listed file is missing, or one is listed twice: an
    install never silently skips or reorders a file."""
    base = (root or sql_dir()) / "functions"
    listed = manifest(root)
    present = {p.relative_to(base).as_posix() for p in base.rglob("*.sql")}
    unlisted = sorted(present - set(listed))
    missing = [name for name in listed if name not in present]
    twice = sorted({name for name in listed if listed.count(name) > 1})
    if unlisted or missing or twice:
        problems = [
            f"{label}: {', '.join(names)}"
            for label, names in (
                ("not listed", unlisted),
                ("listed but missing", missing),
                ("listed twice", twice),
            )
            if names
        ]
        raise ManifestError(f"{base / MANIFEST} is out of date ({'; '.join(problems)})")
    return [base / name for name in listed]


def functions_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def install(
    dsn: str,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
    shards: int | None = None,
    lock_down: bool = False,
    role_prefix: str | None = None,
    exclusive_roles: bool = False,
    warn: Callable[[str], None] | None = None,
) -> list[str]:
    """Apply pending migrations and the function definitions, then the shard layout when
    ``shards`` is given; ``lock_down``: then ``queue._lock_down()`` (no CONNECT or TEMPORARY
    for PUBLIC, notifications without names). ``role_prefix``: the install's roles are
    ``<prefix>_producer``, ``_worker``, ``_admin`` and ``_monitor`` (default: the prefix it
    was installed with, ``andal`` for a new install; another prefix than the recorded one is
    refused with SQLSTATE 55000). When those roles hold grants in another database of the
    cluster, ``warn`` (default: a line on stderr) is told, or with ``exclusive_roles`` the
    install is refused with SQLSTATE 55006; both before anything is written. Returns what
    was done."""
    if role_prefix is not None and not ROLE_PREFIX.fullmatch(role_prefix):
        raise ValueError(f"role_prefix must match {ROLE_PREFIX.pattern} (got {role_prefix!r})")
    root = root or sql_dir()
    log = log or (lambda _msg: None)
    done: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn, _serialised(conn, dsn) as locked:
        prefix = _role_prefix(conn, role_prefix)
        _check_shared_roles(conn, prefix, exclusive_roles, warn or _warn_stderr)
        for version, path in migrations(root):
            if version in _applied(conn):  # read again: an install may have run meanwhile
                continue
            log(f"applying migration {path.name}")
            with conn.transaction():
                conn.execute(_with_roles(path.read_text(), prefix))
                conn.execute(
                    "insert into queue.schema_migrations (version, name) values (%s, %s)",
                    (version, path.stem),
                )
            done.append(f"migration {path.name}")
            locked()
        done += _apply_functions(conn, root, prefix, log)
        if _has_prefix_column(conn):
            conn.execute(
                "update queue.install_state set role_prefix = %(p)s where role_prefix <> %(p)s",
                {"p": prefix},
            )
        if shards is not None:
            done += _reshard(conn, shards, log)
        if lock_down:
            done += [r[0] for r in conn.execute("select queue._lock_down()").fetchall()]
    return done


@contextmanager
def _serialised(conn: psycopg.Connection, dsn: str) -> Iterator[Callable[[], None]]:
    """Hold the install lock while the block runs. Yields ``locked()``, to call after each
    migration: the first one makes LOCK_TABLE, and then its lock is taken (before the next
    step; the migrations are read again after it)."""
    holder = psycopg.connect(dsn, autocommit=False)
    advisory = False
    have_table = False

    def locked() -> None:
        nonlocal have_table
        if not have_table and _exists(conn, LOCK_TABLE):
            holder.execute("set local idle_in_transaction_session_timeout = 0")
            holder.execute(f"lock table {LOCK_TABLE} in share update exclusive mode")
            have_table = True

    try:
        locked()
        if not have_table:  # nothing of andal's yet: the advisory lock is all there is
            conn.execute("select pg_advisory_lock(%s)", (INSTALL_LOCK,))
            advisory = True
            locked()
        yield locked
    finally:
        holder.close()  # rolls back: the table lock goes
        if advisory and not conn.closed:
            conn.execute("select pg_advisory_unlock(%s)", (INSTALL_LOCK,))


def _exists(conn: psycopg.Connection, relation: str) -> bool:
    row = conn.execute("select to_regclass(%s) is not null", (relation,)).fetchone()
    return bool(row and row[0])


def _apply_functions(
    conn: psycopg.Connection, root: Path, prefix: str, log: Callable[[str], None]
) -> list[str]:
    """Re-apply every function file in one transaction when their digest changed."""
    files = function_files(root)
    digest = functions_digest(files)
    state = conn.execute("select functions_digest from queue.install_state where id").fetchone()
    if state is not None and state[0] == digest:
        return []
    log(f"applying {len(files)} function files")
    with conn.transaction():
        conn.execute("set local check_function_bodies = off")
        for f in files:
            conn.execute(_with_roles(f.read_text(), prefix))
        conn.execute(
            "insert into queue.install_state (id, functions_digest)"
            " values (true, %s) on conflict (id) do update"
            " set functions_digest = excluded.functions_digest, installed_at = now()",
            (digest,),
        )
    return [f"functions ({len(files)} files)"]


def _reshard(conn: psycopg.Connection, shards: int, log: Callable[[str], None]) -> list[str]:
    current = len(conn.execute("select shard from queue.shards()").fetchall())
    if current == shards:
        return []
    log(f"sharding queue.jobs: {current} -> {shards} shards")
    with conn.transaction():
        row = conn.execute("select queue.set_shards(shards => %s)", (shards,)).fetchone()
    moved = row[0] if row else 0
    return [f"shards {current} -> {shards} ({moved} live jobs moved)"]


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


def shared_role_databases(conn: psycopg.Connection, prefix: str) -> list[str]:
    """The other databases of the cluster where the install's roles hold grants."""
    roles = [f"{prefix}_{kind}" for kind in ("producer", "worker", "admin", "monitor")]
    row = conn.execute(SHARED_ROLES, {"roles": roles}).fetchone()
    return list(row[0]) if row else []


def _check_shared_roles(
    conn: psycopg.Connection, prefix: str, exclusive: bool, warn: Callable[[str], None]
) -> None:
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
        " docs/multi-db.md)"
    )
    if exclusive:  # the texts travel as parameters (a database name may hold any character)
        conn.execute(
            "select set_config('andal.refusal', %s, false), set_config('andal.fix', %s, false)",
            (what, fix + "."),
        )
        conn.execute(
            "do $$ begin raise exception '%', current_setting('andal.refusal')"
            f" using errcode = '{ROLES_SHARED}', hint = current_setting('andal.fix'); end $$"
        )
    warn(f"warning: {what}. {fix}, or pass --exclusive-roles to refuse such an install.")


def _warn_stderr(message: str) -> None:
    print(f"andal install: {message}", file=sys.stderr, flush=True)


def _with_roles(text: str, prefix: str) -> str:
    """The SQL source with the install's role names."""
    if prefix == "andal":
        return text
    return ROLE_NAMES.sub(lambda m: f"{prefix}_{m.group(1)}", text)


def _has_prefix_column(conn: psycopg.Connection) -> bool:
    row = conn.execute(
        "select exists (select from pg_attribute where attname = 'role_prefix'"
        " and attrelid = to_regclass('queue.install_state'))"
    ).fetchone()
    return bool(row and row[0])


def _role_prefix(conn: psycopg.Connection, wanted: str | None) -> str:
    """The install's role prefix: the recorded one, else ``wanted`` or ``andal``. Another
    prefix than the recorded one is refused (55000), before anything is written."""
    row = None
    if _has_prefix_column(conn):
        row = conn.execute("select role_prefix from queue.install_state").fetchone()
    recorded = row[0] if row else ("andal" if _applied(conn) else None)
    if recorded and wanted and wanted != recorded:
        conn.execute(
            psycopg.sql.SQL(
                "do $$ begin raise exception 'andal is installed here with role prefix %',"
                " {r} using errcode = '55000', hint = 'Install with role prefix ' || {r}"
                " || ' (or none), or into another database.'; end $$"
            ).format(r=psycopg.sql.Literal(recorded))
        )
    return recorded or wanted or "andal"


def _env_shards() -> int | None:
    value = os.environ.get("ANDAL_SHARDS", "").strip()
    return int(value) if value else None


def _applied(conn: psycopg.Connection[Any]) -> set[str]:
    exists = conn.execute("select to_regclass('queue.schema_migrations') is not null").fetchone()
    if not exists or not exists[0]:
        return set()
    return {r[0] for r in conn.execute("select version from queue.schema_migrations")}


def main(argv: list[str] | None = None) -> int:
    """``python -m andal.install [DSN] [--shards N]`` (default ``$DATABASE_URL``; ``--shards``
    or ``$ANDAL_SHARDS``: the live table's shard count, see ``queue.set_shards``)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m andal.install")
    p.add_argument("dsn", nargs="?", default=os.environ.get("DATABASE_URL", ""))
    p.add_argument("--shards", type=int, default=_env_shards())
    p.add_argument("--lock-down", action="store_true", help="see queue._lock_down()")
    p.add_argument("--role-prefix", help="roles <prefix>_producer, _worker, _admin, _monitor")
    p.add_argument(
        "--exclusive-roles",
        action="store_true",
        help="refuse (SQLSTATE 55006) when the roles hold grants in another database",
    )
    args = p.parse_args(argv)
    if not args.dsn:
        print("andal install: no database: pass a DSN or set DATABASE_URL", file=sys.stderr)
        return 2
    try:
        steps = install(
            args.dsn,
            log=print,
            shards=args.shards,
            lock_down=args.lock_down,
            role_prefix=args.role_prefix,
            exclusive_roles=args.exclusive_roles,
        )
    except SqlNotFound as exc:
        print(f"andal install: {exc}", file=sys.stderr)
        return 4
    for step in steps or ["already up to date"]:
        print(step)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
