"""Install or upgrade andal's SQL into a database.

Run-once migrations (``sql/schema/NNNN_*.sql``) are applied in order, each in its own
transaction, and recorded in ``queue.schema_migrations``. The re-runnable function definitions
(``sql/functions/**.sql``) are then re-applied in one transaction when their content changed
since the last install. Concurrent installs are serialised by a session advisory lock, so a
second run changes nothing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import psycopg

#: Session advisory lock that serialises installs (the bytes of "andal").
INSTALL_LOCK = 0x616E64616C


def sql_dir() -> Path:
    """Where the SQL sources live: ``$ANDAL_SQL_DIR`` or the repository's ``sql/``."""
    env = os.environ.get("ANDAL_SQL_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "sql"
        if (candidate / "schema").is_dir():
            return candidate
    candidate = here.parent / "sql"  # packaged copy
    if (candidate / "schema").is_dir():
        return candidate
    raise FileNotFoundError("andal SQL sources not found; set ANDAL_SQL_DIR")


def migrations(root: Path | None = None) -> list[tuple[str, Path]]:
    root = root or sql_dir()
    return [(p.name.split("_", 1)[0], p) for p in sorted((root / "schema").glob("*.sql"))]


def function_files(root: Path | None = None) -> list[Path]:
    root = root or sql_dir()
    return sorted((root / "functions").rglob("*.sql"))


def functions_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def install(
    dsn: str, root: Path | None = None, log: Callable[[str], None] | None = None
) -> list[str]:
    """Apply pending migrations and the function definitions. Returns what was done."""
    root = root or sql_dir()
    log = log or (lambda _msg: None)
    done: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select pg_advisory_lock(%s)", (INSTALL_LOCK,))
        try:
            applied = _applied(conn)
            for version, path in migrations(root):
                if version in applied:
                    continue
                log(f"applying migration {path.name}")
                with conn.transaction():
                    conn.execute(path.read_text())
                    conn.execute(
                        "insert into queue.schema_migrations (version, name) values (%s, %s)",
                        (version, path.stem),
                    )
                done.append(f"migration {path.name}")
            files = function_files(root)
            digest = functions_digest(files)
            current = conn.execute(
                "select functions_digest from queue.install_state where id"
            ).fetchone()
            if current is None or current[0] != digest:
                log(f"applying {len(files)} function files")
                with conn.transaction():
                    conn.execute("set local check_function_bodies = off")
                    for f in files:
                        conn.execute(f.read_text())
                    conn.execute(
                        "insert into queue.install_state (id, functions_digest)"
                        " values (true, %s) on conflict (id) do update"
                        " set functions_digest = excluded.functions_digest, installed_at = now()",
                        (digest,),
                    )
                done.append(f"functions ({len(files)} files)")
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (INSTALL_LOCK,))
    return done


def _applied(conn: psycopg.Connection) -> set[str]:
    exists = conn.execute("select to_regclass('queue.schema_migrations') is not null").fetchone()
    if not exists or not exists[0]:
        return set()
    return {r[0] for r in conn.execute("select version from queue.schema_migrations")}


def main(argv: list[str] | None = None) -> int:
    """``python -m andal.install [DSN]`` (default ``$DATABASE_URL``)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    dsn = args[0] if args else os.environ.get("DATABASE_URL", "")
    for step in install(dsn, log=print) or ["already up to date"]:
        print(step)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
