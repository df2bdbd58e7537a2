"""Shared fixtures: a real PostgreSQL server, a fresh andal database per test module.

With ``ANDAL_SHARDS=n`` the template is installed with its live table in n shards.

With ``ANDAL_TEST_PREFIX=ci7`` (default ``andal``) every database and role the suite makes on
the shared server starts with ``ci7_``: the template is installed with role prefix ``ci7``
(roles ``ci7_producer`` ... :data:`ROLES`), names come from :func:`test_name`.

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
from andal.roles import DEFAULT_PREFIX, KINDS, ROLE_PREFIX, derived_prefix

PGHOST = os.environ.get("PGHOST", "127.0.0.1")
PGPORT = int(os.environ.get("PGPORT", "5432"))
PGUSER = os.environ.get("PGUSER", "postgres")
#: ``ANDAL_SHARDS=4`` runs the suite on a sharded install (``make test-py SHARDS=4``).
SHARDS = int(os.environ["ANDAL_SHARDS"]) if os.environ.get("ANDAL_SHARDS") else None
#: Room left after the prefix for the longest name the suite builds on it.
TEST_PREFIX_MAX = 20


def _test_prefix() -> str:
    prefix = os.environ.get("ANDAL_TEST_PREFIX", "") or DEFAULT_PREFIX
    if not ROLE_PREFIX.fullmatch(prefix) or len(prefix) > TEST_PREFIX_MAX:
        raise pytest.UsageError(
            f"ANDAL_TEST_PREFIX={prefix!r}: it must match {ROLE_PREFIX.pattern} (lower-case"
            f" letter first, then lower-case letters, digits, _) and have at most"
            f" {TEST_PREFIX_MAX} characters"
        )
    return prefix


#: ``ANDAL_TEST_PREFIX``: the first part of every database and role name the suite makes.
TEST_PREFIX = _test_prefix()
#: The template's install roles: ``<TEST_PREFIX>_producer`` ...
ROLES = {kind: f"{TEST_PREFIX}_{kind}" for kind in KINDS}


def test_name(kind: str, digits: int = 8) -> str:
    """A fresh name for a database or role: ``<TEST_PREFIX>_<kind>_<hex digits>``."""
    return f"{TEST_PREFIX}_{kind}_{uuid.uuid4().hex[:digits]}"


test_name.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def own_prefix(dbname: str) -> str | None:
    """The role prefix for an install whose point is not the default prefix: None (a default
    install, roles derived from the name, as always) under the default ``andal``; else the
    database's name, so its roles start with TEST_PREFIX too (:func:`drop_roles_of`)."""
    return None if TEST_PREFIX == DEFAULT_PREFIX else dbname


def own_prefix_args(dbname: str) -> list[str]:
    """:func:`own_prefix` as arguments of ``andal install``."""
    prefix = own_prefix(dbname)
    return ["--role-prefix", prefix] if prefix else []


def make_dsn(dbname: str) -> str:
    return f"postgresql://{PGUSER}@{PGHOST}:{PGPORT}/{dbname}"


@pytest.fixture(scope="session")
def template_db() -> Iterator[str]:
    name = test_name("tpl")
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    install(make_dsn(name), shards=SHARDS, role_prefix=TEST_PREFIX)
    try:
        yield name
    finally:
        janitor.drop()


@pytest.fixture(scope="module")
def dsn(template_db: str) -> Iterator[str]:
    """A fresh database with andal installed, for one test module."""
    name = test_name("t", 10)
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
    (roles outlive their database): those of the prefix derived from its name, and those of
    :func:`own_prefix`."""
    prefixes = {derived_prefix(dbname), own_prefix(dbname) or derived_prefix(dbname)}
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
        for prefix in sorted(prefixes):
            for kind in KINDS:
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
