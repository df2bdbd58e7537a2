"""Shared fixtures: a real PostgreSQL server, a fresh andal database per test module.

With ``ANDAL_SHARDS=n`` the template is installed with its live table in n shards.

The server is the one at $PGHOST:$PGPORT (default 127.0.0.1:5432, user postgres). A template
database with andal installed is made once per session; each module gets a copy of it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from pytest_postgresql.janitor import DatabaseJanitor

from andal.install import install
from andal.roles import derived_prefix

PGHOST = os.environ.get("PGHOST", "127.0.0.1")
PGPORT = int(os.environ.get("PGPORT", "5432"))
PGUSER = os.environ.get("PGUSER", "postgres")
#: ``ANDAL_SHARDS=4`` runs the suite on a sharded install (``make test-py SHARDS=4``).
SHARDS = int(os.environ["ANDAL_SHARDS"]) if os.environ.get("ANDAL_SHARDS") else None


def make_dsn(dbname: str) -> str:
    return f"postgresql://{PGUSER}@{PGHOST}:{PGPORT}/{dbname}"


@pytest.fixture(scope="session")
def template_db() -> Iterator[str]:
    name = f"andal_tpl_{uuid.uuid4().hex[:8]}"
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    install(make_dsn(name), shards=SHARDS, role_prefix="andal")
    try:
        yield name
    finally:
        janitor.drop()


@pytest.fixture(scope="module")
def dsn(template_db: str) -> Iterator[str]:
    """A fresh database with andal installed, for one test module."""
    name = f"andal_t_{uuid.uuid4().hex[:10]}"
    janitor = DatabaseJanitor(
        user=PGUSER,
        host=PGHOST,
        port=PGPORT,
        dbname=name,
        template_dbname=template_db,
    )
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the module's database."""
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def clean(dsn: str) -> None:
    """Empty andal's data tables (not its install bookkeeping) before a test."""
    with psycopg.connect(dsn, autocommit=True) as c:
        tables = c.execute(
            "select string_agg(format('%I.%I', schemaname, tablename), ', ')"
            " from pg_tables where schemaname in ('queue', 'cache')"
            " and tablename not in ('schema_migrations', 'install_state', 'config', 'log_state',"
            " 'usage_state')"
        ).fetchone()[0]
        c.execute(f"truncate {tables}")


def drop_roles_of(dbname: str) -> None:
    """Drop the roles a default install of the dropped database ``dbname`` made for itself
    (roles outlive their database): those of the prefix derived from its name."""
    prefix = derived_prefix(dbname)
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
        for kind in ("producer", "worker", "admin", "monitor"):
            c.execute(f'drop role if exists "{prefix}_{kind}"')


def wait_for(
    predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.05, what: str = ""
) -> object:
    """Poll ``predicate`` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)
