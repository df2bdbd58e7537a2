"""Registration: the worker tells each database who it is (``queue.register_worker``), so that
``queue.workers()`` and the Workers page know it by what it said, not by its session names.

The claim loop of a database registers on its first turn and refreshes every ``EVERY``
seconds (the registration expires after ``EXPIRE`` without one: a worker that crashed or
lost the database drops out); the stop unregisters. A failed call is logged at debug level
and tried again at the next turn: registration is for operators, never a reason to stop.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import timedelta

import psycopg

from . import statements as sql
from .hosts import Lane
from .logs import event, one_line
from .values import text_array

#: Seconds between refreshes, and the expiry they keep ahead of.
EVERY = 10.0
EXPIRE = timedelta(minutes=1)


class Registration:
    """The registration of one worker in one database (``label``)."""

    def __init__(
        self, worker: str, label: str, queues: list[str], slots: int, version: str
    ) -> None:
        self.worker, self.label = worker, label
        self.params = {
            "worker": worker,
            "host": socket.gethostname()[:255] or "unknown",
            "pid": os.getpid(),
            "queues": text_array(queues),
            "slots": slots,
            "version": version[:64] or None,
            "expire_after": EXPIRE,
        }
        self.next = 0.0  # monotonic time of the next refresh: the first turn registers

    def due(self, lane: Lane, now: float) -> None:
        """Register or refresh when due (called by the claim loop on every turn)."""
        if now < self.next:
            return
        self.next = now + EVERY
        self._call(lane, sql.REGISTER_WORKER, self.params, "register")

    def unregister(self, lane: Lane) -> None:
        self._call(lane, sql.UNREGISTER_WORKER, {"worker": self.worker}, "unregister")

    def _call(self, lane: Lane, statement: str, params: dict[str, object], what: str) -> None:
        try:
            with lane.connection() as conn:
                conn.execute(statement, params)
        except psycopg.Error as exc:  # an older install, a refused role, a database away
            self.next = min(self.next, time.monotonic() + EVERY)
            event(
                f"{what}_failed",
                logging.DEBUG,
                worker=self.worker,
                database=self.label,
                error=one_line(exc),
            )
