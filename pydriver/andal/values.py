"""Durations as the API takes them, seconds (an ``int`` or a ``float``) or a ``timedelta``;
arrays as the driver sends them (``text_array``, ``plain_array``).

Shared by the client, the worker and the cache, so none of them imports another for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

Seconds = float | int | timedelta


def as_interval(value: Seconds | None) -> timedelta | None:
    """Seconds (int/float) or a timedelta, as a timedelta; None stays None."""
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=float(value))


def seconds(value: Seconds | None) -> float | None:
    """Seconds (int/float) or a timedelta, as a number of seconds; None stays None."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def text_array(items: Iterable[str | None]) -> str:
    """A PostgreSQL array literal of strings (each quoted, None as NULL), for a ``::text[]``
    or ``::jsonb[]`` parameter. The driver sends its arrays as literals: psycopg adapts a list
    element by element to choose its dumper, which cost more client CPU than the statement
    itself for a batch of 100."""
    return "{" + ",".join("NULL" if v is None else _quote(v) for v in items) + "}"


def plain_array(items: Iterable[Any]) -> str:
    """A PostgreSQL array literal of values whose text never needs quoting (integers, UUIDs),
    for a ``::bigint[]`` or ``::uuid[]`` parameter."""
    return "{" + ",".join(map(str, items)) + "}"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
