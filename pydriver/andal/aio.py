"""The event loop that runs ``async def`` handlers: one asyncio loop in a thread of its own.

Any thread hands it work with ``submit`` (a coroutine factory, called on the loop); every
coroutine becomes a task of the loop, so many handlers are in flight at once without a thread
each. ``stop`` cancels what still runs (a handler that outlived the grace period; its job has
been released by then) and ends the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
Factory = Callable[[], Awaitable[Any]]


class EventLoop:
    """An asyncio event loop running in a daemon thread named ``name``."""

    def __init__(
        self, name: str, on_error: Callable[[str, BaseException], None] | None = None
    ) -> None:
        self.name = name
        self._on_error = on_error
        self._loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def start(self) -> None:
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.call_soon(started.set)
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        started.wait()

    def submit(self, factory: Factory) -> None:
        """Run ``factory()`` as a task of the loop (callable from any thread)."""
        self._loop.call_soon_threadsafe(self._spawn, factory)

    def submit_many(self, factories: Iterable[Factory]) -> None:
        """``submit`` for several, with one wake-up of the loop."""
        batch = list(factories)
        if batch:
            self._loop.call_soon_threadsafe(self._spawn_many, batch)

    def call(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from another thread)."""
        future = asyncio.run_coroutine_threadsafe(_await(coro), self._loop)
        return future.result(timeout)

    @property
    def running(self) -> int:
        """Tasks not finished yet."""
        return len(self._tasks)

    def _spawn_many(self, factories: list[Factory]) -> None:
        for factory in factories:
            self._spawn(factory)

    def _spawn(self, factory: Factory) -> None:
        task = self._loop.create_task(_await(factory()))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and self._on_error is not None:
            self._on_error("event loop", exc)

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel the tasks still running, stop the loop and wait for its thread."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return

        async def cancel_all() -> None:
            tasks = [t for t in self._tasks if not t.done()]
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=timeout)

        with contextlib.suppress(Exception):
            self.call(cancel_all(), timeout + 1)
        self._loop.call_soon_threadsafe(self._loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            self._loop.close()


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable
