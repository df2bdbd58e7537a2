"""Per-install roles: roles are cluster-wide, so a grant of andal_worker works in every
default install of the cluster. A database installed with its own role prefix has roles of
its own: andal's default roles (and so the members granted them for another database) can do
nothing there. The prefix is recorded; another one is refused before anything is written."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from conftest import (
    PGHOST,
    PGPORT,
    PGUSER,
    ROLES,
    TEST_PREFIX,
    drop_roles_of,
    make_dsn,
    own_prefix,
    test_name,
)
from pytest_postgresql.janitor import DatabaseJanitor

from andal.install import INSTALL_LOCK, LOCK_TABLE, install
from andal.roles import DEFAULT_PREFIX, ROLE_PREFIX, derived_prefix, shared_role_databases

PREFIX = f"{TEST_PREFIX}_t{uuid.uuid4().hex[:6]}"
CLAIM_APART = "select job_id from queue.claim(worker => 'w', queues => '{apart}')"


@pytest.fixture
def prefixed_db() -> Iterator[str]:
    name = test_name("r", 10)
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
            for kind in ("producer", "worker", "admin", "monitor"):
                c.execute(f'drop role if exists "{PREFIX}_{kind}"')


def test_an_install_with_its_own_roles(prefixed_db: str) -> None:
    install(prefixed_db, role_prefix=PREFIX)
    with psycopg.connect(prefixed_db, autocommit=True) as c:
        can = c.execute(
            "select has_function_privilege(%s, 'queue.claim(text, text[], int, interval)',"
            " 'execute'), has_function_privilege(%s,"
            " 'queue.claim(text, text[], int, interval)', 'execute'),"
            " has_function_privilege(%s, 'queue.enqueue(jsonb, text, text, int, interval,"
            " int, text, text, jsonb)', 'execute'),"
            " has_schema_privilege(%s, 'queue', 'usage')",
            (f"{PREFIX}_worker", ROLES["worker"], f"{PREFIX}_producer", ROLES["producer"]),
        ).fetchone()
        assert can == (True, False, True, False)
        reads = c.execute(
            "select has_function_privilege(%s, 'queue.stats()', 'execute'),"
            " has_function_privilege(%s, 'queue.stats()', 'execute')",
            (f"{PREFIX}_monitor", ROLES["monitor"]),
        ).fetchone()
        assert reads == (True, False), "the read-only role is the install's own too"
        assert c.execute("select role_prefix from queue.install_state").fetchone() == (PREFIX,)
        names = c.execute("select kind, role_name from queue.roles()").fetchall()
        assert names == [(k, f"{PREFIX}_{k}") for k in ("producer", "worker", "admin", "monitor")]

    assert install(prefixed_db) == [], "re-installing keeps the recorded prefix, changes nothing"
    with pytest.raises(psycopg.Error) as refused:
        install(prefixed_db, role_prefix=TEST_PREFIX)
    assert refused.value.diag.sqlstate == "55000"
    result = subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", prefixed_db, "install",
         "--role-prefix", "other"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0 and "role prefix" in result.stderr, result.stderr
    with psycopg.connect(prefixed_db, autocommit=True) as c:
        assert c.execute("select role_prefix from queue.install_state").fetchone() == (PREFIX,)


def _databases(n: int) -> Iterator[list[str]]:
    names = [test_name("r", 10) for _ in range(n)]
    janitors = [DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=x) for x in names]
    for j in janitors:
        j.init()
    try:
        yield names
    finally:
        for j in janitors:
            j.drop()
        for name in names:
            drop_roles_of(name)


@pytest.fixture
def three_dbs() -> Iterator[list[str]]:
    yield from _databases(3)


def _drop_roles(*prefixes: str, logins: tuple[str, ...] = ()) -> None:
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
        for name in logins:
            c.execute(f'drop role if exists "{name}"')
        for prefix in prefixes:
            for kind in ("producer", "worker", "admin", "monitor"):
                c.execute(f'drop role if exists "{prefix}_{kind}"')


def _installed(dbname: str) -> bool:
    with psycopg.connect(make_dsn(dbname)) as c:
        return bool(c.execute("select to_regnamespace('queue') is not null").fetchone()[0])


def test_roles_shared_with_another_database_are_named(three_dbs: list[str]) -> None:
    """The same roles in two databases: the second install says which database shares them
    and how to keep them apart; with exclusive roles it is refused and writes nothing."""
    first, second, third = three_dbs
    shared = f"{TEST_PREFIX}_s{uuid.uuid4().hex[:6]}"
    try:
        warnings: list[str] = []
        install(make_dsn(first), role_prefix=shared, warn=warnings.append)
        assert warnings == [], "no other database holds the roles yet"
        install(make_dsn(second), role_prefix=shared, warn=warnings.append)
        assert len(warnings) == 1 and first in warnings[0] and "--role-prefix" in warnings[0]
        assert second not in warnings[0].split("database(s)", 1)[1].split(":")[0]

        with pytest.raises(psycopg.Error) as refused:
            install(make_dsn(third), role_prefix=shared, exclusive_roles=True)
        assert refused.value.diag.sqlstate == "55006"
        assert first in str(refused.value) and second in str(refused.value)
        assert not _installed(third), "the refused install wrote nothing"

        result = subprocess.run(
            [sys.executable, "-m", "andal.cli", "--dsn", make_dsn(third), "install",
             "--role-prefix", shared, "--exclusive-roles"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "55006" in result.stderr or "also hold grants" in result.stderr, result.stderr
        assert not _installed(third)
        result = subprocess.run(
            [sys.executable, "-m", "andal.cli", "--dsn", make_dsn(third), "install",
             "--role-prefix", shared],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        lines = [x for x in result.stderr.splitlines() if "warning" in x]
        assert len(lines) == 1 and first in lines[0] and second in lines[0], result.stderr
        assert _installed(third)
    finally:
        for name in three_dbs:  # the grants go with the databases, then the roles can go
            with psycopg.connect(make_dsn(name), autocommit=True) as c:
                c.execute("drop schema if exists queue, cache cascade")
        _drop_roles(shared)


def test_prefixed_installs_are_isolated(three_dbs: list[str]) -> None:
    """Each database with its own prefix: no warning, and a worker of one cannot claim in the
    other (though it may connect to it)."""
    one, two = three_dbs[:2]
    p1, p2 = f"{TEST_PREFIX}_a{uuid.uuid4().hex[:6]}", f"{TEST_PREFIX}_b{uuid.uuid4().hex[:6]}"
    login = test_name("wl", 6)
    try:
        warnings: list[str] = []
        install(make_dsn(one), role_prefix=p1, warn=warnings.append)
        install(make_dsn(two), role_prefix=p2, warn=warnings.append)
        assert warnings == []
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as su:
            su.execute(f'create role "{login}" login in role "{p1}_worker"')
        for name in (one, two):
            with psycopg.connect(make_dsn(name), autocommit=True) as c:
                c.execute("select queue.enqueue(payload => '{}', queue => 'q')")
        as_worker = lambda db: f"postgresql://{login}@{PGHOST}:{PGPORT}/{db}"  # noqa: E731
        with psycopg.connect(as_worker(one), autocommit=True) as w:
            got = w.execute("select job_id from queue.claim(worker => 'w', queues => '{q}')")
            assert len(got.fetchall()) == 1
        with (
            psycopg.connect(as_worker(two), autocommit=True) as w,
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            w.execute("select job_id from queue.claim(worker => 'w', queues => '{q}')")
        with psycopg.connect(make_dsn(two)) as c:
            running = c.execute("select count(*) from queue.jobs where status = 'running'")
            assert running.fetchone() == (0,)
    finally:
        for name in three_dbs:
            with psycopg.connect(make_dsn(name), autocommit=True) as c:
                c.execute("drop schema if exists queue, cache cascade")
        _drop_roles(p1, p2, logins=(login,))


def test_a_role_without_grants_cannot_hold_up_an_upgrade(three_dbs: list[str]) -> None:
    """The advisory key is public knowledge; once andal is installed the installer locks a
    table of andal's instead, which a role without grants can neither lock nor block."""
    name = three_dbs[0]
    stranger = test_name("st", 6)
    install(make_dsn(name), role_prefix=own_prefix(name))
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as su:
        su.execute(f'create role "{stranger}" login')
    try:
        with psycopg.connect(make_dsn(name), autocommit=True) as c:  # make it re-apply
            c.execute("update queue.install_state set functions_digest = 'old'")
        with psycopg.connect(
            f"postgresql://{stranger}@{PGHOST}:{PGPORT}/{name}", autocommit=True
        ) as s:
            s.execute("select pg_advisory_lock(%s)", (INSTALL_LOCK,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                s.execute(f"begin; lock table {LOCK_TABLE} in share update exclusive mode")
            s.execute("rollback")
            done: list[list[str]] = []
            t = threading.Thread(target=lambda: done.append(install(make_dsn(name))))
            t.start()
            t.join(timeout=180)
            assert not t.is_alive(), "the stranger's advisory lock held the upgrade up"
            assert done and any("functions" in step for step in done[0])
    finally:
        with psycopg.connect(make_dsn(name), autocommit=True) as c:
            c.execute("drop schema if exists queue, cache cascade")
        _drop_roles(logins=(stranger,))


def test_a_second_database_gets_roles_of_its_own(dsn: str, three_dbs: list[str]) -> None:
    """The module's database uses the andal_* roles; a default install of another database of
    the cluster takes roles derived from its own name, so a member granted one database's
    worker role can claim there and nowhere else. (Under ANDAL_TEST_PREFIX the module's
    database uses other roles: the test runs while another database uses the andal_* roles.)"""
    other = three_dbs[0]
    own = derived_prefix(other)
    if TEST_PREFIX != DEFAULT_PREFIX:
        with psycopg.connect(make_dsn(other)) as c:
            if not shared_role_databases(c, DEFAULT_PREFIX):
                pytest.skip(
                    f"no database uses the {DEFAULT_PREFIX}_* roles: a default install"
                    " would take them, and the suite makes none under ANDAL_TEST_PREFIX"
                )
    warnings: list[str] = []
    steps = install(make_dsn(other), warn=warnings.append)
    assert warnings == [], "nothing is shared, so nothing to warn about"
    assert steps[-1].startswith(f"roles {own}_producer, {own}_worker"), steps[-1]
    login_plain, login_own = (test_name("wl", 6) for _ in range(2))
    try:
        with psycopg.connect(make_dsn(other), autocommit=True) as c:
            names = dict(c.execute("select kind, role_name from queue.roles()").fetchall())
            assert names["worker"] == f"{own}_worker" and names["monitor"] == f"{own}_monitor"
            can = c.execute(
                "select has_function_privilege(%s, 'queue.claim(text, text[], int, interval)',"
                " 'execute')",
                (ROLES["worker"],),
            ).fetchone()
            assert can == (False,), "the roles of the module's database have no right here"
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as su:
            su.execute(f'create role "{login_plain}" login in role {ROLES["worker"]}')
            su.execute(f'create role "{login_own}" login in role "{own}_worker"')
        for db in (other, psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]):
            with psycopg.connect(make_dsn(db), autocommit=True) as c:
                c.execute("select queue.enqueue(payload => '{}', queue => 'apart')")

        def claims(login: str, db: str) -> int:
            with psycopg.connect(f"postgresql://{login}@{PGHOST}:{PGPORT}/{db}") as w:
                got = w.execute(
                    "select job_id from queue.claim(worker => 'w', queues => '{apart}')"
                )
                n = len(got.fetchall())
                w.rollback()
                return n

        here = str(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])
        assert claims(login_plain, here) == 1 and claims(login_own, other) == 1
        for login, db in ((login_plain, other), (login_own, here)):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                claims(login, db)
        assert install(make_dsn(other)) == [], "an upgrade keeps the recorded prefix"
    finally:
        with psycopg.connect(make_dsn(other), autocommit=True) as c:
            c.execute("drop schema if exists queue, cache cascade")
        _drop_roles(logins=(login_plain, login_own))


@pytest.mark.parametrize(
    ("database", "prefix"),
    [
        ("app", "andal_app"),
        ("billing_eu2", "andal_billing_eu2"),
        ("App", None),  # changed by lower-casing: a hash keeps "App" and "app" apart
        ("a-b", None),
        ("a_b", "andal_a_b"),
        ("", None),
        ("письма", None),
        ("x" * 63, None),
    ],
)
def test_derived_prefixes_fit_and_stay_apart(database: str, prefix: str | None) -> None:
    got = derived_prefix(database)
    assert ROLE_PREFIX.fullmatch(got) and len(f"{got}_producer") <= 63, got
    if prefix is not None:
        assert got == prefix
    else:
        assert got != derived_prefix(database.upper() + "_") and got.startswith("andal_")
    assert derived_prefix(database) == got, "the same name gives the same prefix"


def test_an_existing_role_with_powers_is_not_adopted(prefixed_db: str) -> None:
    """A pre-existing role of the install's names that holds more than andal grants (here
    CREATEROLE) would give it to every member granted it for andal: the install refuses,
    names the role and the attribute, and writes nothing; without it, it goes on."""
    prefix = f"{TEST_PREFIX}_p{uuid.uuid4().hex[:6]}"
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
        c.execute(f'create role "{prefix}_worker" nologin createrole')
    try:
        with pytest.raises(psycopg.Error) as refused:
            install(prefixed_db, role_prefix=prefix)
        assert refused.value.diag.sqlstate == "55000"
        assert f"{prefix}_worker (CREATEROLE)" in str(refused.value)
        assert "nocreaterole" in (refused.value.diag.message_hint or "")
        with psycopg.connect(prefixed_db) as c:
            assert c.execute("select to_regnamespace('queue') is null").fetchone()[0]
            c.execute(f'alter role "{prefix}_worker" nocreaterole')
        assert install(prefixed_db, role_prefix=prefix)
    finally:
        with psycopg.connect(prefixed_db, autocommit=True) as c:
            for kind in ("producer", "worker", "admin", "monitor"):
                if c.execute("select to_regrole(%s)", (f"{prefix}_{kind}",)).fetchone()[0]:
                    c.execute(f'drop owned by "{prefix}_{kind}"')
        _drop_roles(prefix)
