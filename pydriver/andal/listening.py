"""The rules of LISTEN: where a listening session connects (shared by the worker and the
cache's follower, ``andal.cache.follower``), the one line at start that says so, and the
worker's ``Listener``.

A LISTEN needs a session of its own: behind a transaction-mode pooler (pgbouncer
``pool_mode = transaction``) the server connection that ran it goes back to the pool, and the
notifications go nowhere. So a listener connects to the database's ``listen_dsn`` (a direct
connection string, given next to the pooled one) when there is one, to the DSN when no
transaction-mode pooler is in between, and otherwise does not run: its owner then polls.

The worker's ``Listener``: one dedicated connection per database on ``LISTEN andal_jobs``, a
hint that new work may be there (the poll timer is the backstop, so a lost listener costs
latency, never a job). It says when the worker sleeps, so producers send the hint only then
(each NOTIFY makes its transaction commit alone): after the claims of its database came back
empty it calls ``queue.idle(queues)`` and has the claim loop claim once more (a job made
claimable before the idle took effect sent no hint); on a hint it wakes the claim loop first,
then calls ``queue.busy()``. An install without those functions hints on every change, and the
listener only listens. The same connection listens on ``andal_abort`` when the worker
heartbeats: ``queue.cancel`` of a running job notifies the worker holding it, and the listener
pokes that job's heartbeat, which reads the request (``abort_target``; the notification is a
hint, never the decision).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Any

import psycopg
import psycopg.errors

from . import statements as sql
from .hosts import ReconnectBackoff
from .logs import event, one_line

#: How a worker or a cache hears of changes on one database: on its DSN, on the separate
#: listen DSN, or not at all (it polls).
VIA_DSN, VIA_LISTEN_DSN, VIA_POLLING = "dsn", "listen_dsn", "polling"


def listen_via(listen: bool, pooler: str | None, listen_dsn: str | None) -> str:
    """Where the listener of a database connects (``VIA_*``)."""
    if not listen:
        return VIA_POLLING
    if listen_dsn is not None:
        return VIA_LISTEN_DSN
    return VIA_POLLING if pooler == "transaction" else VIA_DSN


def listen_target(
    listen: bool, pooler: str | None, listen_dsn: str | None, dsn: str
) -> tuple[str, str]:
    """``listen_via``'s answer and the DSN a listening session connects to."""
    via = listen_via(listen, pooler, listen_dsn)
    if via == VIA_LISTEN_DSN and listen_dsn is not None:
        return via, listen_dsn
    return via, dsn


def report_listening(
    name: str, via: str, poll: float, pooler: str | None, polled: str, **fields: Any
) -> None:
    """The one line at start (event ``name``, with ``fields``) that says how its owner hears
    of changes; at warning level, with what to do, when a transaction-mode pooler leaves it
    polling (``polled``: what is then found by polling, and the option that would help)."""
    if via == VIA_POLLING and pooler == "transaction":
        event(
            name,
            logging.WARNING,
            **fields,
            via=via,
            poll_s=poll,
            hint=f"behind a transaction-mode pooler LISTEN cannot work: {polled} for notifications",
        )
        return
    event(name, **fields, via=via, poll_s=poll)


#: A database's claims as the listener sees them: (the count of empty claims so far, whether
#: the last claim of each kind came back empty).
Dryness = Callable[[], tuple[int, bool]]

#: How long the listener waits for a notification or a poke before it looks at the stop flag
#: and at its database's claims again.
_CHECK = 0.25


class Listener:
    """The LISTEN loop of one database: ``hint(payload)`` for each notification (and after
    each (re)connect, as notifications may have been missed meanwhile); ``lost(error)`` when
    the connection fails (it reconnects with backoff) until ``stop`` is set. ``abort``: also
    listen on ``andal_abort`` and call it with each notification's payload. ``dryness`` and
    ``queues``: the session sleeps on ``queues`` (``queue.idle``) after a new empty claim,
    and is busy again after a hint; None: it only listens."""

    def __init__(
        self,
        dsn: str,
        application_name: str,
        hint: Callable[[str], None],
        lost: Callable[[str], None],
        stop: threading.Event,
        on_error: Callable[[str], None],
        abort: Callable[[str], None] | None = None,
        dryness: Dryness | None = None,
        queues: list[str] | None = None,
    ) -> None:
        self.dsn = dsn
        self.application_name = application_name[:63]
        self.hint = hint
        self.lost = lost
        self.stop = stop
        self.on_error = on_error
        self.abort = abort
        self.dryness = dryness if queues else None
        self.queues = list(queues or [])
        #: ``poke()`` writes here: the claims came back empty, look now (not at the next check)
        self._pokes: tuple[int, int] | None = os.pipe()
        self._pokes_lock = threading.Lock()
        os.set_blocking(self._pokes[1], False)

    def poke(self) -> None:
        """A claim of this database came back empty: the listener looks whether to sleep."""
        with self._pokes_lock, contextlib.suppress(BlockingIOError):  # full: one is pending
            if self._pokes is not None:
                os.write(self._pokes[1], b".")

    def run(self) -> None:
        backoff = ReconnectBackoff(first=0.1, cap=5.0)
        while not self.stop.is_set():
            try:
                with psycopg.connect(
                    self.dsn,
                    autocommit=True,
                    connect_timeout=5,
                    application_name=self.application_name,
                ) as conn:
                    if self.abort is not None:
                        conn.execute(sql.LISTEN_ABORT)
                    conn.execute(sql.LISTEN)  # last: what pg_stat_activity shows it waits on
                    backoff.reset()
                    self.hint("")  # notifications may have been missed while away
                    self.listen(conn)
            except psycopg.Error as exc:
                self.lost(one_line(exc))
                self.stop.wait(backoff.next())
            except Exception:
                self.on_error("listener")
                self.stop.wait(backoff.next())
        with self._pokes_lock:
            pokes, self._pokes = self._pokes, None
        for fd in pokes or ():
            os.close(fd)

    def listen(self, conn: psycopg.Connection[Any]) -> None:
        """Hand on the notifications of ``conn`` until ``stop``; sleep (``queue.idle``) after
        each new empty claim, wake (``queue.busy``) after each hint."""
        sleeping, woke_at = False, -1
        sleeps = self.dryness is not None
        while not self.stop.is_set():
            hinted = False
            if not sleeps:
                waiting = list(conn.notifies(timeout=_CHECK, stop_after=1))
            else:
                waiting = list(conn.notifies(timeout=0))  # arrived meanwhile (or read already)
                if not waiting:
                    pokes = self._pokes[0] if self._pokes is not None else conn.fileno()
                    ready, _, _ = select.select([conn.fileno(), pokes], [], [], _CHECK)
                    if pokes in ready and pokes != conn.fileno():
                        os.read(pokes, 4096)
                    waiting = list(conn.notifies(timeout=0))
            for note in waiting:
                if note.channel == sql.ABORT_CHANNEL and self.abort is not None:
                    self.abort(note.payload)
                    continue
                ours = not note.payload or note.payload in self.queues
                if ours and self.dryness is not None:
                    woke_at = self.dryness()[0]  # before the hint: its claim may come back empty
                self.hint(note.payload)
                hinted = hinted or ours
            if not sleeps:
                continue
            if hinted and sleeping:
                sleeping = not self.call(conn, sql.BUSY, {})
            elif self.dryness is not None:
                empties, dry = self.dryness()
                if sleeping and not dry:  # its poll found work (a delayed job sends no hint)
                    woke_at, sleeping = empties, not self.call(conn, sql.BUSY, {})
                elif not sleeping and dry and empties != woke_at:
                    sleeping = self.call(conn, sql.IDLE, {"queues": self.queues})
                    if sleeping:
                        self.hint("")  # claim once more: a job of before the idle sent no hint
            sleeps = self.dryness is not None

    def call(self, conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> bool:
        """Run ``queue.idle`` or ``queue.busy``; False (and no more of them on this database)
        when the install has neither."""
        try:
            conn.execute(statement, params)
        except (psycopg.errors.UndefinedFunction, psycopg.errors.InsufficientPrivilege):
            self.dryness = None
            return False
        conn.execute(sql.LISTEN)  # again (a no-op): what pg_stat_activity shows it waits on
        return True


def abort_target(payload: str, worker: str) -> tuple[bool, int | None]:
    """What an ``andal_abort`` notification asks of ``worker``: (whether it may concern it,
    the job id; None: any of its jobs). A locked-down database sends ``{}``: any job may be
    the one."""
    try:
        note = json.loads(payload) if payload else {}
    except ValueError:
        return True, None
    if not isinstance(note, dict):
        return True, None
    if "worker" in note and note["worker"] != worker:
        return False, None
    job_id = note.get("job_id")
    return True, job_id if isinstance(job_id, int) else None
