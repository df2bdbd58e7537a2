"""andal's SQLSTATE contract, mapped to Python exceptions (by code, never by message)."""

from __future__ import annotations

import psycopg

#: Raised by heartbeat/complete/fail/release when the caller's lease is no longer current.
LEASE_LOST = "AN001"


class AndalError(Exception):
    """Base class of the driver's own errors."""


class LeaseLost(AndalError):
    """The job's lease expired or was taken over: the handler's outcome was discarded."""


class NotInstalled(AndalError):
    """The database answers but andal's schema is not installed in it."""


def is_lease_lost(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.Error) and getattr(exc.diag, "sqlstate", None) == LEASE_LOST
