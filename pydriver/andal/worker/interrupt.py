"""Interrupting handlers: at an attempt's deadline (its timeout) and when an abort of the
running job was requested (``queue.cancel``).

Neither is decided here. The database sets the deadline (``queue.claim(..., deadlines =>
true)``), fences the token at it (anything sent for the attempt after it gets AN001) and ends
the attempt when it takes the lease back (reason ``timeout``: retried or dead-lettered by the
queue's policy); it records an abort request and reports it to the heartbeats. This room only
tells the handler, once (``Interrupter.stop``):

* the job's flag is set (``Job.abort_requested``, ``Job.abort_reason``; ``Job.check()``
  raises ``JobInterrupted``): that is all a plain handler gets, as a thread cannot be stopped
  from outside;
* the asyncio task of an ``async def`` handler is cancelled;
* at the deadline the run's outcome is discarded (the database refuses it: the worker sends
  nothing) and the take-back ends the attempt; logged once, at info (``timed_out``);
* after an abort request the handler's outcome, whatever it is, is sent as the
  acknowledgement the database asks for (``queue.fail``: the job ends cancelled, never
  retried; see ``aborted``), logged at info (``abort_requested``, then ``cancelled``).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from ..handlers import TIMEOUT
from ..observe import Observer
from .databases import Source
from .state import _Outcome, _Run

#: A lease lost this close to (or after) the attempt's deadline, by the worker's clock, was
#: fenced by the timeout (the worker's clock for the deadline lags the database's by the claim's
#: round trip): logged as a timeout, not as a fault.
TIMEOUT_SLACK = 1.0


class RunStops(Protocol):
    """What ``Interrupter`` needs of the runs' owner (``slots.Slots``)."""

    def ask_stop(self, run: _Run, reason: str, loses: bool) -> tuple[bool, Any]: ...

    def lose_at_deadline(self, run: _Run, reason: str) -> tuple[bool, bool]: ...

    def count(self, key: str, n: int = 1, src: Source | None = None) -> None: ...


class Interrupter:
    """Tells a run's handler to stop (``stop``); see the module's docstring."""

    def __init__(self, runs: RunStops, observer: Observer) -> None:
        self.runs = runs
        self.observer = observer

    def _told(self, run: _Run, reason: str) -> None:
        if reason == TIMEOUT:
            self.runs.count("timed_out", 1, run.source)
        self.observer.interrupted(run, reason)

    def due(self, runs: list[_Run], now: float) -> list[_Run]:
        """Stop the runs past their deadline; returns the others."""
        left = []
        for r in runs:
            if r.time_up is not None and now >= r.time_up:
                self.stop(r, TIMEOUT)
            else:
                left.append(r)
        return left

    def stop(self, run: _Run, reason: str) -> bool:
        """Ask ``run``'s handler to stop for ``reason`` (``TIMEOUT`` or ``ABORTED``); returns
        whether this call did (once per run). A timed-out run is lost from then on (its
        outcome is discarded); an aborted one whose handler already returned is not touched
        (its outcome is on its way: ``aborted`` turns it into the acknowledgement)."""
        asked, task = self.runs.ask_stop(run, reason, loses=reason == TIMEOUT)
        if not asked:
            return False
        if task is not None:
            task.get_loop().call_soon_threadsafe(task.cancel)
        self._told(run, reason)
        return True

    def timed_out(self, run: _Run) -> bool:
        """Whether ``run``, whose lease the database says is lost, was fenced by its timeout:
        then it is stopped as at its deadline (``stop``), or, when its handler has returned,
        only marked lost (its outcome is refused) and logged once at info."""
        if run.time_up is None or time.monotonic() < run.time_up - TIMEOUT_SLACK:
            return False
        if self.stop(run, TIMEOUT):
            return True
        was_lost, first = self.runs.lose_at_deadline(run, TIMEOUT)
        if first and not was_lost:
            self._told(run, TIMEOUT)
        return True


def aborted(run: _Run, outcome: _Outcome | None = None) -> _Outcome:
    """The outcome that acknowledges an abort request (``queue.fail`` then ends the job
    cancelled): sent whatever the handler did, as the abort wins over a completion."""
    why = "aborted: queue.cancel asked the running job to stop"
    if outcome is not None and not outcome.ok and outcome.reason == "exception":
        raised = outcome.summary()
        if not raised.startswith("andal.JobInterrupted:"):  # the way a handler says "stopped"
            why += f" (the handler then raised {raised})"
    out = _Outcome(run, False, 0.0, error=why, reason="aborted", retryable=False)
    if outcome is not None:
        out.duration_ms, out.rides = outcome.duration_ms, outcome.rides
    return out
