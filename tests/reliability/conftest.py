"""Fixtures of the reliability suite: the module's database (``dsn``, from tests/conftest.py)
with the test-only history schema ``andal_check`` installed, and the ``soak`` marker.

Soak tests (``@pytest.mark.soak``) are skipped unless selected with ``-m soak``
(``make soak``; one at a time: ``pytest -m soak -k chaos``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import psycopg
import pytest

from reliability import history


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "soak: long reliability test (minutes); run with -m soak, not in make test"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "soak" in (config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="soak test: run with -m soak (make soak)")
    for item in items:
        if item.get_closest_marker("soak"):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def rel_dsn(dsn: str) -> str:
    """The module's fresh andal database, with andal_check installed."""
    with psycopg.connect(dsn, autocommit=True) as c:
        history.install(c)
    return dsn


@pytest.fixture
def rconn(rel_dsn: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection; andal's tables and the history are emptied first."""
    with psycopg.connect(rel_dsn, autocommit=True) as c:
        history.reset(c)
        yield c


class Figures(dict):
    """Measured figures of a test: printed at the end, and appended as one JSON line to
    $REL_FIGURES when set (docs/reliability.md quotes them)."""


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    found = Figures()
    start = time.monotonic()
    yield found
    found["duration_s"] = round(time.monotonic() - start, 1)
    line = json.dumps({"test": request.node.name, **found}, default=str)
    print(f"\nFIGURES {line}")
    path = os.environ.get("REL_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(line + "\n")
