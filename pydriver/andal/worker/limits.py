"""Per-queue handler limits of one worker: at most ``Handler.limit`` of a queue's jobs run at
once, whatever the worker's ``concurrency``.

Claims leave out the queues at their limit (``open``). A batch claim may still bring more of
a queue's jobs than its limit allows (they came in one statement): those wait here, holding
their slot and their lease (heartbeated), and start one by one as the queue's running jobs end
(``admit`` and ``done``). A transactional claim takes a ticket on each queue it asks for
before it claims (``take``) and gives back those it did not use (``untake``), so concurrent
transactional claims never exceed a limit either.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Limits(Generic[T]):
    """Running counts and waiting items (runs) of the limited queues."""

    def __init__(self, limits: dict[str, int]) -> None:
        self._limit = dict(limits)
        self._running: dict[str, int] = dict.fromkeys(limits, 0)
        self._waiting: dict[str, deque[T]] = {q: deque() for q in limits}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._limit)

    def limited(self, queue: str) -> bool:
        return queue in self._limit

    def running(self, queue: str) -> int:
        return self._running.get(queue, 0)

    def open(self, queues: Iterable[str]) -> list[str]:
        """The queues of ``queues`` a claim may ask for now: unlimited ones, and limited ones
        whose running and waiting jobs are below their limit."""
        with self._lock:
            return [q for q in queues if self._below(q)]

    def admit(self, queue: str, item: T) -> bool:
        """Whether ``item`` (a job of ``queue``) may start now; when not, it waits and is
        returned by ``done`` once one of the queue's jobs ends."""
        if queue not in self._limit:
            return True
        with self._lock:
            if self._running[queue] < self._limit[queue]:
                self._running[queue] += 1
                return True
            self._waiting[queue].append(item)
            return False

    def done(self, queue: str) -> T | None:
        """A job of ``queue`` that was admitted (or took a ticket) ended: the next waiting
        item, now admitted, or None."""
        if queue not in self._limit:
            return None
        with self._lock:
            waiting = self._waiting[queue]
            if waiting:
                return waiting.popleft()  # takes over the ended job's place
            self._running[queue] -= 1
            return None

    def take(self, queues: Iterable[str]) -> list[str]:
        """Tickets for a claim of one job: the queues it may ask for, a ticket held on each
        limited one (give back the unused ones with ``untake``)."""
        out = []
        with self._lock:
            for q in queues:
                if q not in self._limit:
                    out.append(q)
                elif self._below(q):
                    self._running[q] += 1
                    out.append(q)
        return out

    def untake(self, queues: Iterable[str], used: str | None = None) -> None:
        """Give back the tickets of ``take`` except the one of ``used`` (the claimed job's)."""
        with self._lock:
            for q in queues:
                if q in self._limit and q != used:
                    self._running[q] -= 1

    def _below(self, queue: str) -> bool:
        if queue not in self._limit:
            return True
        return self._running[queue] + len(self._waiting[queue]) < self._limit[queue]
