"""``cache.refill``: a refill after a miss is a ``cache.put`` whose transaction commits
without waiting for the WAL flush (synchronous_commit off until it ends); the Python cache
refills with it on its own autocommit connections."""

from __future__ import annotations

import psycopg

import andal

REFILL = (
    "with r as (select cache.refill(key => %s, value => '{\"n\": 1}', if_version => 0) as v)"
    " select r.v, current_setting('synchronous_commit') from r"
)


def test_a_refill_alone_commits_without_waiting_for_the_flush(dsn: str, clean: None) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("show synchronous_commit").fetchone()[0] == "on"
        version, setting = c.execute(REFILL, ("refill:alone",)).fetchone()
        assert version is not None and setting == "off"
        # the setting was the refill's transaction's only
        assert c.execute("show synchronous_commit").fetchone()[0] == "on"
        got = c.execute("select value from cache.get(key => 'refill:alone')").fetchone()
        assert got == ({"n": 1},)


def test_the_setting_ends_with_the_refills_transaction(dsn: str, clean: None) -> None:
    with psycopg.connect(dsn) as c:  # psycopg opens a transaction before the first statement
        c.execute("select 1")
        version, setting = c.execute(REFILL, ("refill:tx",)).fetchone()
        assert version is not None and setting == "off"
        c.rollback()
        assert c.execute("show synchronous_commit").fetchone()[0] == "on"
        assert c.execute("select count(*) from cache.get(key => 'refill:tx')").fetchone() == (0,)


def test_the_local_cache_refills_through_it(dsn: str, clean: None) -> None:
    cache = andal.Cache(dsn, loader=lambda key: {"loaded": key})
    try:
        assert cache.get("refill:loaded") == {"loaded": "refill:loaded"}
    finally:
        cache.close()
    with psycopg.connect(dsn, autocommit=True) as c:
        got = c.execute("select value from cache.get(key => 'refill:loaded')").fetchone()
    assert got == ({"loaded": "refill:loaded"},)
