"""andal's SQLSTATE contract, mapped to Python exceptions (by code, never by message).

Every SQLSTATE documented in docs/sql-api.md ("Errors") and docs/cache.md has a class here.
Each class is a subclass of both ``AndalError`` and psycopg's class for the same SQLSTATE, and
keeps psycopg's ``sqlstate`` and ``diag``: code written as ``except psycopg.Error`` or
``except psycopg.errors.InvalidParameterValue`` goes on catching what it caught.

``LeaseLost`` (``AN001``), ``PrimaryOnly`` (``AN002``) and ``PartitionUnreachable``
(``AN003``), andal's own codes, are registered
with psycopg: any statement that gets one of them in a process that imported andal raises
it, whoever sent the statement. The
other codes are PostgreSQL's, shared with everything else a program does, so they are not
registered globally: the driver's calls (``Client``, ``AsyncClient``, ``enqueue``, ``jobs``,
``Cache``) convert what they raise with ``convert`` (or the ``translated`` context manager),
and a caller may do the same with its own statements.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg

#: Raised by heartbeat/complete/fail/release when the caller's lease is no longer current.
LEASE_LOST = "AN001"
#: Raised by the shared cache's functions on a hot standby (the cache lives on the primary).
PRIMARY_ONLY = "AN002"
#: Raised by a router function (``andal router``) whose partition cannot be reached.
PARTITION_UNREACHABLE = "AN003"


class AndalError(Exception):
    """Base class of the driver's own errors."""


class NotInstalled(AndalError, pg.InvalidSchemaName):
    """The database answers but andal's schema is not installed in it (a driver call there
    fails with ``3F000``, schema "queue" does not exist): run ``andal install`` (or
    ``andal.install(dsn)``)."""

    FIX = "andal is not installed in this database; run `andal install` (or andal.install(dsn))"


class LeaseLost(AndalError, psycopg.DatabaseError, code=LEASE_LOST):
    """``AN001``: the job id and token are not a current, unexpired lease (it expired, the
    attempt ran past its timeout, another worker took the job back, it is gone, or an abort
    was requested before ``complete``). Nothing was changed: discard the attempt's outcome."""


class PrimaryOnly(AndalError, psycopg.DatabaseError, code=PRIMARY_ONLY):
    """``AN002``: a shared-cache call (``cache.get``, ``get_many``, ``put``, ``invalidate``,
    ``changes_since``, ...) reached a hot standby. The cache's entries are UNLOGGED, so only
    the primary has them: connect the cache to the primary (a multi-host DSN with
    ``target_session_attrs=read-write``). Nothing was read or written."""


class PartitionUnreachable(AndalError, psycopg.OperationalError, code=PARTITION_UNREACHABLE):
    """``AN003``: a call through the PL/Proxy router (``andal router``) needs a partition the
    router cannot reach (PL/Proxy's own ``XX000``, mapped). Calls routed to the other
    partitions go on; nothing was done on the unreachable one. Retry later, or call the
    partition's own DSN once it is back (docs/scaling.md)."""


class BadInput(AndalError):
    """The database refused the call's input; nothing was written."""


class NullArgument(BadInput, pg.NullValueNotAllowed):
    """``22004``: a required argument is null."""


class InvalidArgument(BadInput, pg.InvalidParameterValue):
    """``22023``: a bad value (a name too long, a batch out of range, an interval past its
    bound, arrays of different lengths, ...)."""


class TooLarge(BadInput, pg.ProgramLimitExceeded):
    """``54000``: a payload over the queue's ``payload_limit``, a result over
    ``max_result_bytes``."""


class TooDeep(BadInput, pg.StatementTooComplex):
    """``54001``: JSON nested deeper than the server's ``max_stack_depth`` allows."""


class Unreadable(BadInput, pg.InvalidTextRepresentation):
    """``22P02``: an argument PostgreSQL cannot read as its type (not a number, not JSON)."""


class OutOfRange(BadInput, pg.NumericValueOutOfRange):
    """``22003``: an integer past its range."""


class BadInterval(BadInput, pg.InvalidDatetimeFormat):
    """``22007``: not an interval."""


class IntervalOverflow(BadInput, pg.DatetimeFieldOverflow):
    """``22008``: an interval past its range."""


class BadName(BadInput, pg.InvalidName):
    """``42602``: a relation name that is not a name."""


class NoSuchRelation(BadInput, pg.UndefinedTable):
    """``42P01``: a relation name that names no relation."""


class NulInJson(BadInput, pg.UntranslatableCharacter):
    """``22P05``: a JSON value containing ``\\u0000``."""


class NulInText(BadInput, pg.CharacterNotInRepertoire):
    """``22021``: text containing a NUL byte."""


class UnknownJob(AndalError, pg.UndefinedObject):
    """``42704``: no such job (``cancel``, ``requeue_dead``), or no such object."""


class IllegalTransition(AndalError, pg.ObjectNotInPrerequisiteState):
    """``55000``: the job (or the call) is not in a state that allows it: cancel a dead job,
    requeue a live one, claim outside READ COMMITTED, unschedule a housekeeping schedule."""


class NotPermitted(AndalError, pg.InsufficientPrivilege):
    """``42501``: the calling role was not granted the function, or lacks a right it needs."""


class ReadOnly(AndalError, pg.ReadOnlySqlTransaction):
    """``25006``: a function that writes, called in a READ ONLY transaction."""


class AlreadyTracked(AndalError, pg.DuplicateObject):
    """``42710``: the table already has a trigger of that name (``cache.track``)."""


#: SQLSTATE -> the class the driver raises for it.
BY_SQLSTATE: dict[str, type[psycopg.Error]] = {
    cls.sqlstate: cls  # type: ignore[misc]
    for cls in (
        LeaseLost,
        PrimaryOnly,
        PartitionUnreachable,
        NullArgument,
        InvalidArgument,
        TooLarge,
        TooDeep,
        Unreadable,
        OutOfRange,
        BadInterval,
        IntervalOverflow,
        BadName,
        NoSuchRelation,
        NulInJson,
        NulInText,
        UnknownJob,
        IllegalTransition,
        NotPermitted,
        ReadOnly,
        AlreadyTracked,
        NotInstalled,
    )  # fmt: skip
}


def convert(exc: BaseException) -> BaseException:
    """The typed exception for a psycopg error with a documented SQLSTATE (same message,
    ``sqlstate`` and ``diag``); anything else is returned unchanged."""
    if not isinstance(exc, psycopg.Error) or isinstance(exc, AndalError):
        return exc
    cls = BY_SQLSTATE.get(exc.sqlstate or "")
    if cls is None:
        return exc
    args = exc.args
    if cls is NotInstalled:
        args = (f"{NotInstalled.FIX} ({exc.diag.message_primary or exc})",)
    typed = cls(*args, info=exc.pgresult, encoding=getattr(exc, "_encoding", "utf-8"))
    typed.__traceback__ = exc.__traceback__
    return typed


@contextmanager
def translated() -> Iterator[None]:
    """Around statements: a psycopg error with a documented SQLSTATE leaves as its typed
    exception (``convert``)."""
    try:
        yield
    except psycopg.Error as exc:
        typed = convert(exc)
        if typed is exc:
            raise
        raise typed from None


def is_lease_lost(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.Error) and getattr(exc.diag, "sqlstate", None) == LEASE_LOST


__all__ = [
    "BY_SQLSTATE", "LEASE_LOST", "AlreadyTracked", "AndalError", "BadInput", "BadInterval",
    "BadName", "IllegalTransition", "IntervalOverflow", "InvalidArgument", "LeaseLost",
    "NoSuchRelation", "Unreadable", "NotInstalled", "NotPermitted", "NulInJson", "NulInText",
    "NullArgument", "OutOfRange", "PRIMARY_ONLY", "PrimaryOnly", "ReadOnly", "TooDeep",
    "TooLarge", "UnknownJob", "convert", "is_lease_lost", "translated",
]  # fmt: skip
