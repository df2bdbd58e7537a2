"""A worker's start gives each database the policies and schedules its handlers declare
(``declared``: ``Registry.handler(queue, timeout=, max_attempts=, lease=, backoff=)`` and
``Registry.periodic``): ``apply_policy``, before anything is claimed.

* A queue never configured takes the code's policy. Never configured: ``queue.queue_settings``
  answers ``configured`` false (no row), or its row equals the defaults: the row an enqueue
  makes, which ``queue.maintain()`` forgets as saying nothing. The defaults are what
  ``queue_settings`` answers for a name without a row; no copy of them lives here.
* A configured queue whose value of a setting differs from the code's: one
  ``policy_conflict`` line per queue (every differing setting, with its database and its code
  value); the database wins, unless ``apply`` (``--apply-policy``): then the code's values
  are written.
* A schedule absent is created; one whose definition differs from the code's (its queue and
  timing, and each field the code gives): one ``schedule_conflict`` line, the same rule.
* The same code a second time writes nothing.

The rules (ranges, known kinds, cron syntax) are the SQL's: a refusal comes back as a
``PolicyError`` naming the queue or the schedule.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from .. import operations as ops
from ..errors import AndalError
from ..hosts import database_label, is_connection_error
from ..logs import event
from ..values import as_interval
from .declared import SCHEDULE_FIELDS, Backoff, Periodic, Policy

if TYPE_CHECKING:
    from ..handlers import Registry
    from ..operations import QueueSettings, Schedule


class PolicyError(AndalError, ValueError):
    """The database refused a queue's policy or a schedule declared in the code (the message
    names which, and the database's reason); the database's error is its ``__cause__``."""


def queue_options(policy: Policy) -> dict[str, Any]:
    """The ``configure_queue`` options a policy says (intervals as timedeltas)."""
    backoff = Backoff(policy.backoff) if isinstance(policy.backoff, str) else policy.backoff
    said: dict[str, Any] = {
        "timeout": as_interval(policy.timeout), "max_attempts": policy.max_attempts,
        "lease": as_interval(policy.lease),
    }  # fmt: skip
    if backoff is not None:
        jitter = None if backoff.jitter is None else float(backoff.jitter)
        said.update(
            backoff=backoff.kind, backoff_base=as_interval(backoff.base),
            backoff_cap=as_interval(backoff.cap), jitter=jitter,
        )  # fmt: skip
    return {name: value for name, value in said.items() if value is not None}


def schedule_options(entry: Periodic) -> dict[str, Any]:
    """``queue.schedule``'s options (``operations.schedule``) of a declared schedule."""
    said = {name: getattr(entry, name) for name in SCHEDULE_FIELDS}
    return {**said, "every": as_interval(entry.every)}


def schedule_definition(entry: Periodic) -> dict[str, Any]:
    """What is compared with its row of ``queue.schedules()``: the queue and the timing
    (``cron``, ``every``) always, each other field when given."""
    said = {name: value for name, value in schedule_options(entry).items() if value is not None}
    return {**said, "queue": entry.queue, "cron": entry.cron, "every": as_interval(entry.every)}


# -- applying -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conflict:
    """A setting (or schedule field) whose database value differs from the code's: ``kind``
    "queue" or "schedule", ``name`` the queue or the schedule; ``in_database`` and ``in_code``
    by setting; ``applied``: the code's values were written (``apply``)."""

    kind: str
    name: str
    in_database: dict[str, Any]
    in_code: dict[str, Any]
    applied: bool


@dataclass
class PolicyReport:
    """What ``apply_policy`` did on one database: the queues that took the code's policy
    (never configured), the schedules it created, and the conflicts (each logged once)."""

    database: str
    configured: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    @property
    def wrote(self) -> bool:
        """Whether anything was written."""
        return bool(self.configured or self.created or any(c.applied for c in self.conflicts))


def apply_policy(
    dsn: str,
    registry: Registry,
    *,
    apply: bool = False,
    queues: Iterable[str] | None = None,
    schedules_for: Iterable[str] | None = None,
    worker: str | None = None,
    database: str | None = None,
) -> PolicyReport:
    """Give the database at ``dsn`` the policies and schedules of ``registry`` (an
    ``andal.Registry``), as the module's docstring says: a queue never configured takes the
    code's policy, an absent schedule is created, a difference is logged once and the
    database wins unless ``apply``. ``queues``: only these queues' policies and the schedules
    into them (default: every policy and every schedule, one into a queue without a handler
    here too); ``schedules_for``: only the schedules into these queues (default: as
    ``queues``; a worker of several databases gives each the schedules of the queues routed
    to it); ``worker``, ``database``: the names the log lines carry. Raises
    ``PolicyError`` when the database refuses a value; connection errors as psycopg raises
    them."""
    wanted = None if queues is None else set(queues)
    placed = wanted if schedules_for is None else set(schedules_for)
    report = PolicyReport(database or database_label(dsn))
    context = {"worker": worker, "database": report.database}
    policies = {q: p for q, p in registry.policies().items() if wanted is None or q in wanted}
    periodics = [p for p in registry.periodics() if placed is None or p.queue in placed]
    if not policies and not periodics:
        return report  # nothing declared: no connection
    with psycopg.connect(dsn, autocommit=True) as conn:
        defaults = _Defaults(conn)
        for queue, policy in policies.items():
            _refused(f"the policy of queue {queue!r}", _queue, conn, queue, policy,
                     defaults, apply, report, context)  # fmt: skip
        if periodics:
            existing = {s.name: s for s in ops.schedules().run(conn)}
            for entry in periodics:
                _refused(f"schedule {entry.name!r}", _schedule, conn, entry,
                         existing.get(entry.name), apply, report, context)  # fmt: skip
    return report


def _refused(what: str, step: Callable[..., None], *args: Any) -> None:
    """Run ``step``; a refusal by the database becomes a ``PolicyError`` naming ``what``."""
    try:
        step(*args)
    except psycopg.Error as exc:
        if is_connection_error(exc):
            raise
        reason = exc.diag.message_primary or str(exc).strip()
        state = getattr(exc, "sqlstate", None) or "?"
        raise PolicyError(f"{what} was refused: {reason} (SQLSTATE {state})") from exc


class _Defaults:
    """The settings of a queue never configured: what ``queue.queue_settings`` answers for a
    name without a row (``configured`` false proves it), read once, when first needed."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.settings: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        for _ in range(3):  # a random name with a row: ask again
            if self.settings is not None:
                break
            probe = ops.queue_settings(f"andal.defaults.{uuid.uuid4().hex}").run(self.conn)
            if not probe.configured:
                self.settings = _settings(probe)
        if self.settings is None:
            raise RuntimeError("queue.queue_settings answered no queue without a row")
        return self.settings


def _settings(s: QueueSettings) -> dict[str, Any]:
    skip = {"queue", "configured", "updated_at"}
    return {f.name: getattr(s, f.name) for f in fields(s) if f.name not in skip}


def _same(setting: str, in_database: Any, in_code: Any) -> bool:
    if setting == "timeout" and in_database is None:  # no timeout: configure_queue's 0
        in_database = timedelta(0)
    if setting == "jitter":  # a real: compare as the database stores it
        return _real(in_database) == _real(in_code)
    return bool(in_database == in_code)


def _real(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _queue(
    conn: psycopg.Connection[Any], queue: str, policy: Policy, defaults: _Defaults,
    apply: bool, report: PolicyReport, context: dict[str, Any],
) -> None:  # fmt: skip
    want = queue_options(policy)
    have = ops.queue_settings(queue).run(conn)
    held = _settings(have)
    differs = [s for s, value in want.items() if not _same(s, held[s], value)]
    if not differs:
        return
    if not have.configured or held == defaults.get():
        ops.configure_queue(queue, want).run(conn)
        report.configured.append(queue)
        event("policy_applied", queue=queue, settings=_shown(want), **context)
        return
    conflict = Conflict(
        "queue", queue, {s: held[s] for s in differs}, {s: want[s] for s in differs}, apply
    )
    if apply:
        ops.configure_queue(queue, conflict.in_code).run(conn)
    report.conflicts.append(conflict)
    _log_conflict("policy_conflict", conflict, context, queue=queue)


def _schedule(
    conn: psycopg.Connection[Any], entry: Periodic, have: Schedule | None, apply: bool,
    report: PolicyReport, context: dict[str, Any],
) -> None:  # fmt: skip
    if have is None:
        ops.schedule(entry.name, entry.queue, schedule_options(entry)).run(conn)
        report.created.append(entry.name)
        event("schedule_created", schedule=entry.name, queue=entry.queue, **context)
        return
    want = schedule_definition(entry)
    differs = [f for f, value in want.items() if getattr(have, f) != value]
    if not differs:
        return
    conflict = Conflict(
        "schedule", entry.name, {f: getattr(have, f) for f in differs},
        {f: want[f] for f in differs}, apply,
    )  # fmt: skip
    if apply:
        ops.schedule(entry.name, entry.queue, schedule_options(entry)).run(conn)
    report.conflicts.append(conflict)
    _log_conflict("schedule_conflict", conflict, context, schedule=entry.name)


def _log_conflict(name: str, c: Conflict, context: dict[str, Any], **which: Any) -> None:
    """One line: which queue or schedule, its differing settings, both values, who won."""
    event(
        name, logging.WARNING, **which, settings=list(c.in_code),
        in_database=_shown(c.in_database), in_code=_shown(c.in_code),
        winner="code" if c.applied else "database", **context,
    )  # fmt: skip


def _shown(values: dict[str, Any]) -> dict[str, Any]:
    """Values for a log line: intervals in seconds."""
    return {k: v.total_seconds() if isinstance(v, timedelta) else v for k, v in values.items()}
