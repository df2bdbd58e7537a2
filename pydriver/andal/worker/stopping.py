"""The stop request of one worker: ``stop()`` called, or SIGTERM/SIGINT received.

The rooms ask ``requested()`` (stop claiming, end the loops), wait with ``pause`` (a sleep a
stop cuts short) and ``hard()`` (a second signal: stop at once, resend nothing). A second
signal exits the process there and then.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType
from typing import Any


class StopRequest:
    """Whether, and how hard, a worker is asked to stop."""

    __slots__ = ("event", "signals")

    def __init__(self) -> None:
        self.event = threading.Event()  # set by stop() and by the stop itself
        self.signals = 0  # SIGTERM/SIGINT received

    def requested(self) -> bool:
        return self.signals > 0 or self.event.is_set()

    def hard(self) -> bool:
        """A second signal: stop at once."""
        return self.signals > 1

    def set(self) -> None:
        self.event.set()

    def pause(self, seconds: float) -> None:
        """Wait ``seconds``, less when a stop is asked (short waits, so a signal, which only
        sets a count, is seen promptly)."""
        deadline = time.monotonic() + seconds
        while not self.requested():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.event.wait(min(left, 0.2))

    def install(self) -> dict[int, Any]:
        """Handle SIGTERM and SIGINT; returns the previous handlers (see ``restore``)."""
        previous: dict[int, Any] = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    @staticmethod
    def restore(previous: dict[int, Any]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Runs in the main thread between two bytecodes, maybe while that thread holds a lock
        # (an Event's, say): only plain assignments here. The runner and the claim loops see
        # the count within 0.2 s.
        self.signals += 1
        if self.signals > 1:
            os.write(2, b'{"event": "worker_killed", "logger": "andal", "level": "warning"}\n')
            os._exit(128 + signum)
