"""The schema of an andal database as ``pg_dump --schema-only`` prints it, normalised, and the
committed dump of a fresh install (``sql/schema.dump.sql``).

``python tests/schema.py`` (``make schema-dump``) installs the working tree's SQL into a
scratch database on $PGHOST/$PGPORT/$PGUSER and rewrites the committed dump from it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "sql" / "schema.dump.sql"
HEADER = (
    "-- The schema of a fresh andal install (pg_dump --schema-only of schemas queue and cache,\n"
    "-- normalised). Regenerate with `make schema-dump` in the commit that changes the schema;\n"
    "-- tests/test_upgrade.py diffs it against a fresh install.\n"
)


def server() -> dict[str, str]:
    return {
        "host": os.environ.get("PGHOST", "127.0.0.1"),
        "port": os.environ.get("PGPORT", "5432"),
        "user": os.environ.get("PGUSER", "postgres"),
    }


#: The index of one shard of a partitioned table and its attachment to the parent's index. A
#: partitioned index implies one on every partition, so these lines say nothing of their own,
#: and their names are PostgreSQL's (made from the shard's and the columns' names), not
#: andal's: the indexes are declared on queue.jobs (migration 0011).
SHARD_INDEX = re.compile(
    r"^(CREATE (UNIQUE )?INDEX \S+ ON queue\.jobs_p\d+ "
    r"|ALTER INDEX \S+ ATTACH PARTITION queue\.jobs_)"
)


def dump(dbname: str) -> str:
    """The normalised schema of ``dbname``: no comments or version banner, no session SETs,
    no ownership, no runs of blank lines, no per-shard index lines (``SHARD_INDEX``);
    privileges and function bodies are kept."""
    s = server()
    out = subprocess.run(
        ["pg_dump", "--schema-only", "--no-owner", "-h", s["host"], "-p", s["port"],
         "-U", s["user"], "-n", "queue", "-n", "cache", dbname],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    kept: list[str] = []
    for line in out.splitlines():
        if line.startswith(("--", "\\restrict", "\\unrestrict", "SET ", "SELECT pg_catalog.")):
            continue
        if SHARD_INDEX.match(line):
            continue
        if line == "" and (not kept or kept[-1] == ""):
            continue
        kept.append(line.rstrip())
    return "\n".join(kept).strip() + "\n"


def committed() -> str:
    """The committed dump, normalised as ``dump`` (its header dropped)."""
    text = COMMITTED.read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip() + "\n"


def main() -> int:
    from andal.install import install

    name = f"andal_dump_{uuid.uuid4().hex[:8]}"
    admin = psycopg.conninfo.make_conninfo(**server(), dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"create database {name}")
    try:
        install(psycopg.conninfo.make_conninfo(admin, dbname=name), role_prefix="andal")
        COMMITTED.write_text(HEADER + dump(name))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"drop database if exists {name} with (force)")
    print(f"wrote {COMMITTED.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
