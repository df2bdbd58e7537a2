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

The install's roles are cluster-wide, so each install has a role prefix of its own
(``andal.roles``): a new install without ``--role-prefix`` takes ``andal`` when no other
database of the cluster uses those roles, else a prefix derived from its database's name.
When the chosen roles already hold grants in another database (a prefix given on purpose),
a member granted them for one database works in the other too: the install says so (one
warning line naming those databases), or with ``exclusive_roles`` refuses (SQLSTATE 55006)
before anything is written.

``shards`` (optional) then spreads the live table ``queue.jobs`` (partitioned by hash of the
queue, see migration 0011) over that many shards, in place (``queue.set_shards``; 1:
unsharded). Left out, an install keeps the layout it has: a new install is unsharded.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from .roles import (
    DEFAULT_PREFIX,
    ROLE_PREFIX,
    ROLES_SHARED,
    check_attributes,
    check_shared,
    choose_prefix,
    create_roles,
    missing_roles,
    role_names,
    shared_role_databases,
    warn_stderr,
    with_roles,
)
from .sources import SqlNotFound, sql_dir, sql_version

#: Session advisory lock that serialises installs into a database where andal's first
#: migration has not run yet (the bytes of "andal"); later, the lock on LOCK_TABLE does.
INSTALL_LOCK = 0x616E64616C
#: Locked by the installer's second session while it works: SHARE UPDATE EXCLUSIVE conflicts
#: with itself but not with the inserts into the table, and needs a privilege on the table
#: (UPDATE, DELETE or TRUNCATE) that only its owner has. No migration may alter this table.
LOCK_TABLE = "queue.schema_migrations"

__all__ = [
    "ROLES_SHARED",
    "SqlNotFound",
    "install",
    "main",
    "shared_role_databases",
    "sql_dir",
    "sql_version",
]


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
    was installed with; for a new install ``andal`` when no other database of the cluster
    uses the ``andal_*`` roles, else one derived from the database's name, see
    ``andal.roles``; another prefix than the recorded one is refused with SQLSTATE 55000).
    When those roles hold grants in another database of the cluster, ``warn`` (default: a
    line on stderr) is told, or with ``exclusive_roles`` the install is refused with SQLSTATE
    55006; both before anything is written. A new install's steps end with the names of its
    roles. Returns what was done."""
    if role_prefix is not None and not ROLE_PREFIX.fullmatch(role_prefix):
        raise ValueError(f"role_prefix must match {ROLE_PREFIX.pattern} (got {role_prefix!r})")
    root = root or sql_dir()
    log = log or (lambda _msg: None)
    done: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn, _serialised(conn, dsn) as locked:
        recorded = _recorded_prefix(conn)
        prefix = choose_prefix(conn, recorded, role_prefix)
        check_attributes(conn, prefix)
        check_shared(conn, prefix, exclusive_roles, warn or warn_stderr)
        repaired = _repair_roles(conn, prefix) if recorded is not None else []
        for version, path in migrations(root):
            if version in _applied(conn):  # read again: an install may have run meanwhile
                continue
            log(f"applying migration {path.name}")
            with conn.transaction():
                conn.execute(with_roles(path.read_text(), prefix))
                conn.execute(
                    "insert into queue.schema_migrations (version, name) values (%s, %s)",
                    (version, path.stem),
                )
            done.append(f"migration {path.name}")
            locked()
        done += _apply_functions(conn, root, prefix, log, force=bool(repaired))
        done += repaired
        if _has_prefix_column(conn):
            conn.execute(
                "update queue.install_state set role_prefix = %(p)s where role_prefix <> %(p)s",
                {"p": prefix},
            )
        if recorded is None:
            done.append(_roles_step(conn, prefix, role_prefix, warn))
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


def _repair_roles(conn: psycopg.Connection, prefix: str) -> list[str]:
    """An install whose roles are gone (its database restored into a new cluster: a dump
    carries no roles, so the grants to them were lost too) gets them back; the functions are
    then re-applied, with their grants. Returns the step, or nothing when none is missing."""
    missing = missing_roles(conn, prefix)
    if not missing:
        return []
    create_roles(conn, missing)
    return [
        f"repaired roles {', '.join(missing)}: they did not exist in this cluster (a restored"
        " dump carries no roles); created them and granted again what the install grants them"
    ]


def _apply_functions(
    conn: psycopg.Connection, root: Path, prefix: str, log: Callable[[str], None],
    force: bool = False,
) -> list[str]:  # fmt: skip
    """Re-apply every function file in one transaction when their digest changed (or
    ``force``)."""
    files = function_files(root)
    digest = functions_digest(files)
    state = conn.execute("select functions_digest from queue.install_state where id").fetchone()
    if state is not None and state[0] == digest and not force:
        return []
    log(f"applying {len(files)} function files")
    with conn.transaction():
        conn.execute("set local check_function_bodies = off")
        for f in files:
            conn.execute(with_roles(f.read_text(), prefix))
        conn.execute(
            "insert into queue.install_state (id, functions_digest)"
            " values (true, %s) on conflict (id) do update"
            " set functions_digest = excluded.functions_digest, installed_at = now()",
            (digest,),
        )
        if _has_prefix_column(conn):  # recorded with the functions that grant to the roles
            conn.execute("update queue.install_state set role_prefix = %s", (prefix,))
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


def _has_prefix_column(conn: psycopg.Connection) -> bool:
    row = conn.execute(
        "select exists (select from pg_attribute where attname = 'role_prefix'"
        " and attrelid = to_regclass('queue.install_state'))"
    ).fetchone()
    return bool(row and row[0])


def _roles_step(
    conn: psycopg.Connection,
    prefix: str,
    wanted: str | None,
    warn: Callable[[str], None] | None,
) -> str:
    """What a new install says about its roles. A default ``andal`` is checked once more:
    another database's first install, at the same moment, may have taken those names too."""
    if wanted is None and prefix == DEFAULT_PREFIX:
        check_shared(conn, prefix, False, warn or warn_stderr)
    why = ""
    if wanted is None and prefix != DEFAULT_PREFIX:
        why = f" (the {DEFAULT_PREFIX}_* roles already serve another database of the cluster)"
    return "roles " + ", ".join(role_names(prefix)) + why


def _recorded_prefix(conn: psycopg.Connection) -> str | None:
    """The role prefix this database's install recorded (``andal`` for an install older than
    the record), or None on a new install."""
    row = None
    if _has_prefix_column(conn):
        row = conn.execute("select role_prefix from queue.install_state").fetchone()
    return row[0] if row else ("andal" if _applied(conn) else None)


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
