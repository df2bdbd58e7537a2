"""The local cache behind a transaction-mode pooler (a real pgbouncer, as in test_pgbouncer):
its reads and writes go through the pooler without prepared statements, and it follows the
change log on a separate direct ``listen_dsn`` (notifications arrive long before the poll
interval) or, without one, by polling; which of the two it does is said once."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for
from test_pgbouncer import PGBOUNCER, Events, pgbouncer, through

from andal.cache import Cache


@pytest.fixture(scope="module")
def tx_port() -> Iterator[int]:
    if not os.path.exists(PGBOUNCER):
        pytest.skip("pgbouncer is not installed (Debian: pgbouncer)")
    with pgbouncer("transaction") as port:
        yield port


@pytest.fixture
def events() -> Iterator[Events]:
    import logging

    logger = logging.getLogger("andal")
    handler = Events()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def invalidated_elsewhere(dsn: str, key: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("select cache.invalidate(key => %s)", (key,))


def read_many(cache: Cache, key: str, n: int = 20) -> None:
    """More reads and writes than psycopg's prepare threshold (5), through the pooler."""
    for i in range(n):
        cache.put(f"{key}:{i}", i)
        assert cache.get(f"{key}:{i}") == i
    cache.put(key, "v")
    assert cache.lookup(key).source == "local"


def test_listen_dsn_brings_invalidations_past_the_pooler(
    dsn: str, clean: None, tx_port: int, events: Events
) -> None:
    poll = 60.0  # a drop seen before this came through a notification
    listen_dsn = dsn + "?application_name=andal_cache_listen"
    with Cache(
        through(dsn, tx_port), pooler="transaction", listen_dsn=listen_dsn, poll_interval=poll,
        max_staleness=2 * poll,
    ) as cache:  # fmt: skip
        assert cache.follows_by == "listen_dsn"
        wait_for(lambda: cache.listening, timeout=15, what="the listener")
        with psycopg.connect(dsn, autocommit=True) as direct:
            app = direct.execute(
                "select application_name from pg_stat_activity where pid = %s",
                (cache.listener_pid,),
            ).fetchone()
        assert app == ("andal_cache_listen",), "the listener is on listen_dsn"
        read_many(cache, "pl")
        invalidated_elsewhere(dsn, "pl")
        wait_for(lambda: "pl" not in cache._entries, timeout=poll / 2, what="the drop")
        assert cache.stats().get("listener_errors", 0) == 0
    (said,) = events.named("cache_listening")
    assert said.via == "listen_dsn"


def test_without_listen_dsn_it_polls_and_says_so_once(
    dsn: str, clean: None, tx_port: int, events: Events
) -> None:
    with Cache(through(dsn, tx_port), pooler="transaction", poll_interval=0.2) as cache:
        assert cache.follows_by == "polling"
        wait_for(cache.live, timeout=15, what="a first read of the log")
        read_many(cache, "pp")
        invalidated_elsewhere(dsn, "pp")
        wait_for(lambda: "pp" not in cache._entries, timeout=15, what="the drop")
        assert not cache.listening and cache.listener_pid is None
        assert cache.stats().get("listener_errors", 0) == 0
    (said,) = events.named("cache_listening")
    assert said.via == "polling" and said.levelname == "WARNING"
    assert "listen_dsn" in said.hint


def test_listen_off_polls_without_a_pooler(dsn: str, clean: None, events: Events) -> None:
    with Cache(dsn, listen=False, poll_interval=0.2) as cache:
        wait_for(cache.live, timeout=15, what="a first read of the log")
        cache.put("lo", 1)
        assert cache.lookup("lo").source == "local"
        invalidated_elsewhere(dsn, "lo")
        wait_for(lambda: "lo" not in cache._entries, timeout=15, what="the drop")
    (said,) = events.named("cache_listening")
    assert said.via == "polling" and said.levelname == "INFO"


def test_a_bad_pooler_is_refused(dsn: str) -> None:
    with pytest.raises(ValueError, match="pooler"):
        Cache(dsn, pooler="statement", follow=False)
