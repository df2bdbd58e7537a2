"""Run a ``Worker`` in a thread of the test process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import andal


@contextmanager
def running(worker: andal.Worker, timeout: float = 30.0) -> Iterator[andal.Worker]:
    """Start ``worker`` in the background; stop it gracefully when the block ends."""
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
        code = worker.join(timeout)
        assert code is not None, "the worker did not stop"
