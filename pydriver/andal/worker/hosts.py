"""The worker as its rooms see it: one adapter implementing the narrow interfaces the rooms
declare (``heartbeat.Host``, ``maintenance.Host``), so each room can be driven by a stand-in
in a test."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .databases import Source
from .state import _Run

if TYPE_CHECKING:
    from . import Worker


class _Host:
    """The worker, as its rooms see it (``heartbeat.Host``, ``maintenance.Host``)."""

    __slots__ = ("w",)

    def __init__(self, worker: Worker) -> None:
        self.w = worker

    def held(self, src: Source) -> list[_Run]:
        with self.w.slots.lock:
            return [
                r
                for r in src.active.values()
                if not r.lost and not r.handler.transactional and r.state != "done"
            ]

    def holding(self, run: _Run) -> bool:
        with self.w.slots.lock:
            return run.state in ("claimed", "running")

    def lost(self, run: _Run, detected_by: str) -> None:
        self.w.trouble.lease_lost(run, detected_by)

    def trouble(self, src: Source, during: str, exc: BaseException) -> None:
        self.w.trouble.db_trouble(src, during, exc)

    def beaten(self, src: Source, took: float) -> None:
        self.w.slots.count("heartbeats", src=src)
        self.w.observer.heartbeat(took)

    def interrupt(self, run: _Run, reason: str) -> None:
        self.w.interrupter.stop(run, reason)

    def due_now(self, runs: list[_Run], now: float) -> list[_Run]:
        return self.w.interrupter.due(runs, now)

    def hint(self, src: Source) -> None:
        self.w._hint(src)

    def vacuumed(self, tables: list[str]) -> None:
        self.w.observer.vacuumed(tables)

    def internal_error(self, where: str) -> None:
        self.w._internal_error(where)
