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


def dump(dbname: str) -> str:
    """The normalised schema of ``dbname``: no comments or version banner, no session SETs,
    no ownership, no runs of blank lines; privileges and function bodies are kept. The
    indexes PostgreSQL makes on each partition of a partitioned index are named
    ``<parent index>@<partition>`` (PostgreSQL picks their names from the history: an index
    added to a sharded table and one a fresh sharding made differ only by that name), and
    sorted; their definitions are compared as they are."""
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
        if line == "" and (not kept or kept[-1] == ""):
            continue
        kept.append(line.rstrip())
    return _partition_indexes("\n".join(kept).strip() + "\n")


ATTACH = re.compile(r"^ALTER INDEX (\S+) ATTACH PARTITION (\S+);$", re.M)
INDEX_STATEMENTS = ("CREATE INDEX ", "CREATE UNIQUE INDEX ", "ALTER INDEX ")
ON_TABLE = re.compile(r"^CREATE (?:UNIQUE )?INDEX (\S+) ON (\S+) ", re.M)


def _partition_indexes(text: str) -> str:
    tables = {m.group(1): m.group(2) for m in ON_TABLE.finditer(text)}
    names = {}
    for m in ATTACH.finditer(text):
        parent, child = m.group(1), m.group(2)
        schema = child.rsplit(".", 1)[0] + "." if "." in child else ""
        local = child.rsplit(".", 1)[-1]
        if local in tables or child in tables:
            table = tables.get(local) or tables[child]
            names[local] = f'"{parent.rsplit(".", 1)[-1]}@{table.rsplit(".", 1)[-1]}"'
            names[child] = schema + names[local]
    for old in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.\"]){re.escape(old)}(?![\w\"])", names[old], text)
    # one statement per block: sort the runs of index statements (pg_dump sorts by name)
    blocks = text.split("\n\n")
    out: list[str] = []
    run: list[str] = []
    kind = ""
    for block in [*blocks, ""]:
        this = block.split(" ", 1)[0] if block.startswith(INDEX_STATEMENTS) else ""
        if this and this == kind:
            run.append(block)
            continue
        out += sorted(run)
        run, kind = ([block], this) if this else ([], "")
        if not this:
            out.append(block)
    return "\n\n".join(out[:-1])


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
        install(psycopg.conninfo.make_conninfo(admin, dbname=name))
        COMMITTED.write_text(HEADER + dump(name))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"drop database if exists {name} with (force)")
    print(f"wrote {COMMITTED.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
