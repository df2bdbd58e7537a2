"""The worker as its rooms see it: one adapter implementing the narrow interfaces the rooms
declare (``heartbeat.Host``, ``maintenance.Host``), so each room can be driven by a stand-in
in a test."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .databases import Source
from .state import _Run

if TYPE_CHECKING:
    from ..observe import Observer
    from .execute import InternalError
    from .interrupt import Interrupter
    from .slots import Slots
    from .trouble import Trouble


class _Host:
    """The worker, as its rooms see it (``heartbeat.Host``, ``maintenance.Host``): the shared
    state (``slots``), ``trouble``, the ``observer``, the ``interrupter``, and the worker's
    ``hint(src)`` and ``internal_error(where)``."""

    __slots__ = ("slots", "trouble_", "observer", "interrupter", "hint_", "internal_error_")

    def __init__(
        self,
        slots: Slots,
        trouble: Trouble,
        observer: Observer,
        interrupter: Interrupter,
        hint: Callable[[Source], None],
        internal_error: InternalError,
    ) -> None:
        self.slots, self.trouble_, self.observer = slots, trouble, observer
        self.interrupter, self.hint_, self.internal_error_ = interrupter, hint, internal_error

    def held(self, src: Source) -> list[_Run]:
        return self.slots.held(src)

    def holding(self, run: _Run) -> bool:
        return self.slots.holding(run)

    def lost(self, run: _Run, detected_by: str) -> None:
        self.trouble_.lease_lost(run, detected_by)

    def trouble(self, src: Source, during: str, exc: BaseException) -> None:
        self.trouble_.db_trouble(src, during, exc)

    def beaten(self, src: Source, took: float) -> None:
        self.slots.count("heartbeats", src=src)
        self.observer.heartbeat(took)

    def interrupt(self, run: _Run, reason: str) -> None:
        self.interrupter.stop(run, reason)

    def due_now(self, runs: list[_Run], now: float) -> list[_Run]:
        return self.interrupter.due(runs, now)

    def hint(self, src: Source) -> None:
        self.hint_(src)

    def vacuumed(self, tables: list[str]) -> None:
        self.observer.vacuumed(tables)

    def internal_error(self, where: str) -> None:
        self.internal_error_(where)
