"""Durations as the API takes them: seconds (an ``int`` or a ``float``) or a ``timedelta``.

Shared by the client, the worker and the cache, so none of them imports another for them.
"""

from __future__ import annotations

from datetime import timedelta

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
