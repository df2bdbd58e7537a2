"""Typed exceptions: every documented SQLSTATE leaves the driver as its own class, which is
also psycopg's class for that SQLSTATE (so ``except psycopg.Error`` code keeps working), and
a lost lease is ``andal.LeaseLost`` wherever it is raised."""

from __future__ import annotations

import asyncio
import pickle

import psycopg
import pytest

import andal
from andal import errors
from andal.cache import Cache


def test_every_documented_sqlstate_has_a_class() -> None:
    documented = {
        "AN001", "AN002", "AN003", "22004", "22023", "54000", "54001", "42704", "55000", "42501",
        "25006", "22P02", "22003", "22007", "22008", "42602", "42P01", "22P05", "22021", "42710",
        "3F000",  # andal's schema missing: NotInstalled
    }  # fmt: skip
    assert set(errors.BY_SQLSTATE) == documented
    for code, cls in errors.BY_SQLSTATE.items():
        assert issubclass(cls, andal.AndalError) and issubclass(cls, psycopg.Error)
        if not code.startswith("AN"):
            assert issubclass(cls, psycopg.errors.lookup(code)), code


def test_a_lost_lease_raises_lease_lost_from_plain_psycopg(
    conn: psycopg.Connection, clean: None
) -> None:
    job_id = andal.enqueue(conn, {}, "e_lease")
    conn.execute("select * from queue.claim(worker => 'w', queues => '{e_lease}')")
    with pytest.raises(andal.LeaseLost) as got:
        conn.execute("select queue.complete(job_id => %s, token => gen_random_uuid())", (job_id,))
    exc = got.value
    assert isinstance(exc, psycopg.DatabaseError)
    assert exc.sqlstate == exc.diag.sqlstate == "AN001"
    assert errors.is_lease_lost(exc)
    assert isinstance(pickle.loads(pickle.dumps(exc)), andal.LeaseLost)


def test_producers_raise_the_typed_class(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    with pytest.raises(andal.InvalidArgument) as got:
        andal.enqueue(conn, [], "e_bad")  # not an object
    assert isinstance(got.value, psycopg.errors.InvalidParameterValue)
    assert got.value.diag.message_primary == "payload must be a JSON object, not array"
    with pytest.raises(andal.InvalidArgument):
        andal.Client(dsn).enqueue({}, "")
    with pytest.raises(andal.TooLarge):
        andal.enqueue(conn, {"x": "x" * (1 << 20)}, "e_big")
    with pytest.raises(andal.BadInput):
        andal.Client(dsn).enqueue_many([{}, {}], ["e_a", "x" * 129])

    async def on_async() -> None:
        await andal.AsyncClient(dsn).enqueue({}, "x" * 129)

    with pytest.raises(andal.InvalidArgument):
        asyncio.run(on_async())
    assert conn.execute("select count(*) from queue.jobs").fetchone() == (0,)


def test_cache_raises_the_typed_class(dsn: str, clean: None) -> None:
    with Cache(dsn, follow=False) as cache:
        with pytest.raises(andal.InvalidArgument):
            cache.put("", 1)
        with pytest.raises(andal.InvalidArgument):
            cache.get("")


def test_translated_wraps_a_callers_own_statements(conn: psycopg.Connection) -> None:
    with pytest.raises(andal.UnknownJob), errors.translated():
        conn.execute("select queue.requeue_dead(job_id => 0)")
    with errors.translated():  # nothing raised: nothing changed
        conn.execute("select 1")
    plain = psycopg.errors.DivisionByZero("x")
    assert errors.convert(plain) is plain  # not andal's: left alone
