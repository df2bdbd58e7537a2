"""Install or upgrade andal's SQL into a database.

Run-once migrations (``sql/schema/NNNN_*.sql``) are applied in order, each in its own
transaction, and recorded in ``queue.schema_migrations``. The re-runnable function definitions
(``sql/functions/**.sql``, in the order ``sql/functions/manifest.txt`` lists them) are then
re-applied in one transaction when their content changed since the last install. Concurrent
installs are serialised by a session advisory lock, so a second run changes nothing.

``shards`` (optional) then spreads the live table ``queue.jobs`` (partitioned by hash of the
queue, see migration 0011) over that many shards, in place (``queue.set_shards``; 1:
unsharded). Left out, an install keeps the layout it has: a new install is unsharded.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from .sources import SqlNotFound, sql_dir, sql_version

#: Session advisory lock that serialises installs (the bytes of "andal").
INSTALL_LOCK = 0x616E64616C
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
) -> list[str]:
    """Apply pending migrations and the function definitions, then the shard layout when
    ``shards`` is given; ``lock_down``: then ``queue._lock_down()`` (no CONNECT or TEMPORARY
    for PUBLIC, notifications without names). ``role_prefix``: the install's roles are
    ``<prefix>_producer``, ``_worker``, ``_admin`` and ``_monitor`` (default: the prefix it
    was installed with, ``andal`` for a new install; another prefix than the recorded one is
    refused with SQLSTATE 55000). Returns what was done."""
    if role_prefix is not None and not ROLE_PREFIX.fullmatch(role_prefix):
        raise ValueError(f"role_prefix must match {ROLE_PREFIX.pattern} (got {role_prefix!r})")
    root = root or sql_dir()
    log = log or (lambda _msg: None)
    done: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select pg_advisory_lock(%s)", (INSTALL_LOCK,))
        try:
            applied = _applied(conn)
            prefix = _role_prefix(conn, role_prefix)
            for version, path in migrations(root):
                if version in applied:
                    continue
                log(f"applying migration {path.name}")
                with conn.transaction():
                    conn.execute(_with_roles(path.read_text(), prefix))
                    conn.execute(
                        "insert into queue.schema_migrations (version, name) values (%s, %s)",
                        (version, path.stem),
                    )
                done.append(f"migration {path.name}")
            files = function_files(root)
            digest = functions_digest(files)
            state = conn.execute(
                "select functions_digest from queue.install_state where id"
            ).fetchone()
            if state is None or state[0] != digest:
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
                done.append(f"functions ({len(files)} files)")
            if _has_prefix_column(conn):
                conn.execute(
                    "update queue.install_state set role_prefix = %(p)s where role_prefix <> %(p)s",
                    {"p": prefix},
                )
            if shards is not None:
                current = len(conn.execute("select shard from queue.shards()").fetchall())
                if current != shards:
                    log(f"sharding queue.jobs: {current} -> {shards} shards")
                    with conn.transaction():
                        row = conn.execute(
                            "select queue.set_shards(shards => %s)", (shards,)
                        ).fetchone()
                    moved = row[0] if row else 0
                    done.append(f"shards {current} -> {shards} ({moved} live jobs moved)")
            if lock_down:
                done += [r[0] for r in conn.execute("select queue._lock_down()").fetchall()]
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (INSTALL_LOCK,))
    return done


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
        )
    except SqlNotFound as exc:
        print(f"andal install: {exc}", file=sys.stderr)
        return 4
    for step in steps or ["already up to date"]:
        print(step)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
