"""A worker's bookkeeping of the jobs it holds, and the small tools its loops share."""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..handlers import Fail, Handler, Job, Retry

if TYPE_CHECKING:
    from .databases import Source


# -- internal state -------------------------------------------------------------------------


class RunState(str, Enum):
    """Where a held job is, one way: ``CLAIMED`` -> ``RUNNING`` (its handler started) ->
    ``FINISHING`` (its outcome is being recorded) -> ``DONE``; ``CLAIMED`` or ``RUNNING`` ->
    ``RELEASED`` (a stop gives it back) -> ``DONE``; ``CLAIMED`` -> ``DONE`` (its lease was lost
    before it started). ``_Run.move`` is the one transition."""

    CLAIMED = "claimed"
    RUNNING = "running"
    FINISHING = "finishing"
    RELEASED = "released"
    DONE = "done"

    @property
    def holding(self) -> bool:
        """Its handler may still run (a stop or a timeout can still reach it)."""
        return self in _HOLDING


_HOLDING = frozenset({RunState.CLAIMED, RunState.RUNNING})
#: The moves ``_Run.move`` allows (staying where it is is always allowed: a batch resent).
_MOVES = {
    RunState.CLAIMED: frozenset(RunState) - {RunState.CLAIMED},
    RunState.RUNNING: frozenset({RunState.FINISHING, RunState.RELEASED, RunState.DONE}),
    RunState.FINISHING: frozenset({RunState.DONE}),
    RunState.RELEASED: frozenset({RunState.DONE}),
    RunState.DONE: frozenset(),
}


class _Run:
    """A job held by this worker, from claim until its outcome is recorded or dropped.

    ``state``: a ``RunState``, changed by ``move`` only (with the slots' lock held, once the
    run is shared). ``lost`` is set once the lease is known to be gone (the outcome will be
    discarded).
    ``source``: the database it came from (every statement about it goes there). ``slot``:
    it holds a handler slot (a leased run until its handler returns, a run that never ran
    until it is finished). ``ran``: its handler is done (the outcome waits for the completer).
    ``time_up``: the monotonic time of the attempt's deadline (None: no timeout), by the
    database's clock; ``task``: the asyncio task running an ``async def`` handler (to cancel
    it); ``beat_every``: the heartbeat interval of its first lease.
    """

    __slots__ = (
        "source",
        "slot",
        "ran",
        "job",
        "handler",
        "state",
        "lost",
        "finished",
        "claimed_at",
        "lease_len",
        "next_beat",
        "deadline",
        "span",
        "time_up",
        "task",
        "beat_every",
    )

    def __init__(
        self,
        source: Source,
        job: Job,
        handler: Handler,
        lease_len: float,
        now: float | None = None,
    ) -> None:
        if now is None:
            now = time.monotonic()
        self.source = source
        self.slot = True
        self.ran = False
        self.job = job
        self.handler = handler
        self.state = RunState.CLAIMED
        self.lost = False
        self.finished = False
        self.claimed_at = now
        self.lease_len = max(lease_len, 0.001)
        self.beat_every = self.lease_len / 3
        self.next_beat = now + self.beat_every
        self.deadline = now + self.lease_len
        self.span: Any = None  # the job's root span, when tracing
        self.time_up: float | None = None
        self.task: Any = None

    def move(self, to: RunState) -> None:
        """The one transition of ``state`` (see ``RunState``); a move back is a bug of ours."""
        if to is not self.state and to not in _MOVES[self.state]:
            raise RuntimeError(f"job {self.job.id}: no move from {self.state.value} to {to.value}")
        self.state = to

    def fields(self, **extra: Any) -> dict[str, Any]:
        job = self.job
        out = {
            "job_id": job.id,
            "queue": job.queue,
            "category": job.category,
            "attempt": job.attempt,
            "database": job.database,
        }
        out.update(extra)
        return out


@dataclass(slots=True)
class _Outcome:
    run: _Run
    ok: bool
    duration_ms: float
    result: str | None = None  # JSON text
    error: str | None = None
    reason: str | None = None  # exception | retry | fail
    retry_in: timedelta | None = None
    retryable: bool = True
    rides: bool = False  # the next claim of its database rides on its completion
    brief: str | None = None  # the exception's first line (see summary)

    def summary(self) -> str:
        """The error as logs and traces report it: the exception's first line (its type and
        message, not the traceback nor the CONTEXT lines psycopg appends)."""
        if self.brief is not None:
            return self.brief
        lines = (self.error or "").strip().splitlines()
        return lines[0] if lines else ""


class Probe:
    """The transactional probes of one database and handler form: ``dry`` (whether its last
    claim found work), ``searching`` (probes claiming now: at most one at a time)."""

    __slots__ = ("dry", "searching")

    def __init__(self, poll: float) -> None:
        self.dry = _Dry(poll)
        self.searching = 0


class _Dry:
    """After an empty claim: the queues may be empty, or other claimers held the rows or the
    category locks. Claim again after a pause that doubles from 10 ms up to the poll interval
    while claims stay empty (so an idle worker polls every ``poll`` seconds); a claim that
    finds work or a NOTIFY hint ends the pause. ``hints`` counts the hints: an empty claim
    sent before the last hint arrived (its snapshot may predate the new job) starts no
    pause. ``empties`` counts the empty claims that started one, and ``on_empty`` is called
    after each (the listener sleeps after a new one, see ``andal.listening.Listener``)."""

    def __init__(self, poll: float) -> None:
        self.poll, self.step, self.until, self.hints, self.empties = poll, 0.0, 0.0, 0, 0
        self.on_empty: Callable[[], None] | None = None

    def ready(self, now: float) -> bool:
        return now >= self.until

    def empty(self, hints: int | None = None) -> None:
        if hints is not None and hints != self.hints:
            return
        self.step = min(self.step * 2 or 0.01, self.poll)
        self.until = time.monotonic() + self.step
        self.empties += 1
        if self.on_empty is not None:
            self.on_empty()

    def found(self) -> None:
        self.step = self.until = 0.0

    def hint(self) -> None:
        self.hints += 1
        self.until = 0.0


#: How long the completer waits for the outcomes of the jobs still in their slots before it
#: sends the ones it has (see Completer.run).
_LINGER = 0.002

_STOP = object()


def error_text(exc: BaseException) -> str:
    """The error sent to ``queue.fail``: the exception and its last five frames, whole. The
    bound on what is kept is SQL's (``queue._bound_error``, ``max_error_bytes``)."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-5))


def default_name() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _dump_result(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _sendable(text: str) -> str:
    """A handler's text as PostgreSQL can store it: text holds no NUL, written as \\0."""
    return text.replace("\x00", "\\0")


def _failure(run: _Run, exc: BaseException) -> _Outcome:
    if isinstance(exc, Retry):
        return _Outcome(
            run, False, 0.0, error=_sendable(str(exc)) or "retry requested", reason="retry",
            retry_in=exc.delay,
        )  # fmt: skip
    if isinstance(exc, Fail):
        return _Outcome(
            run, False, 0.0, error=_sendable(str(exc)) or "failed", reason="fail", retryable=False
        )
    return _Outcome(
        run, False, 0.0, error=_sendable(error_text(exc)), reason="exception",
        brief=_sendable(exception_line(exc)),
    )  # fmt: skip


def exception_line(exc: BaseException) -> str:
    """``Type: message``, the message's first line only (psycopg appends CONTEXT lines)."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__
