"""andal in FastAPI (any Starlette app): an ``andal.AsyncClient`` for the app's lifetime, a
route dependency, and optionally a worker beside the app::

    from fastapi import Depends, FastAPI
    import andal
    from andal.contrib.fastapi import get_client, lifespan

    app = FastAPI(lifespan=lifespan(DSN))

    @app.post("/signup")
    async def signup(client: andal.AsyncClient = Depends(get_client)) -> dict:
        return {"job": await client.enqueue({"to": "a@b.c"}, "mail")}

``lifespan(dsn)`` checks at startup that each database answers and has andal installed
(``check=False``: no check), puts the client on ``app.state.andal`` and takes it off when the
app stops. The client holds no connection between calls (each call opens a short one), so
there is nothing else to close. ``worker=andal.Worker(...)`` (not started) runs that worker
in threads of the app's process from startup to shutdown (``Worker.start``/``stop``/
``join``; or ``worker=`` a function that makes one); several app processes then mean
several workers. A worker of its own process (``andal worker MODULE``) is the usual choice
in production: docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from starlette.requests import Request

from ..client import AsyncClient
from ..worker import Worker

#: The attribute of ``app.state`` that holds the client.
STATE_KEY = "andal"

Lifespan = Callable[[Any], AbstractAsyncContextManager[None]]


def lifespan(
    dsn: str | Sequence[str] | None = None,
    *,
    routes: Mapping[str, str | int] | None = None,
    worker: Worker | Callable[[], Worker] | None = None,
    check: bool = True,
) -> Lifespan:
    """A FastAPI/Starlette ``lifespan``: ``FastAPI(lifespan=lifespan(dsn))``. It can be
    nested in a lifespan of your own too: ``async with lifespan(dsn)(app): yield``.

    ``dsn``: one DSN or several (``AsyncClient``; default ``$ANDAL_DSN``, then
    ``$DATABASE_URL``, read at startup); ``routes``: the client's; ``worker``: a worker to
    run beside the app (started at startup, stopped and joined at shutdown), or a function
    making one at each startup (a ``Worker`` runs once: an app started twice, as tests do,
    needs the function); ``check``: fail the startup when a database does not answer or
    andal is not installed in it."""

    @asynccontextmanager
    async def run(app: Any) -> AsyncIterator[None]:
        client = AsyncClient(_given(dsn), routes=routes)
        if check:
            for one in client.dsns:  # unreachable: psycopg.OperationalError; NotInstalled
                await AsyncClient(one).version()
        beside = worker() if worker is not None and not isinstance(worker, Worker) else worker
        if beside is not None:
            await asyncio.to_thread(beside.start)  # connects: off the event loop
        setattr(app.state, STATE_KEY, client)
        try:
            yield
        finally:
            delattr(app.state, STATE_KEY)
            if beside is not None:
                beside.stop()
                await asyncio.to_thread(beside.join)  # its running handlers: up to its grace

    return run


def get_client(request: Request) -> AsyncClient:
    """The route dependency: ``client: AsyncClient = Depends(get_client)``."""
    client = getattr(request.app.state, STATE_KEY, None)
    if not isinstance(client, AsyncClient):
        raise RuntimeError(
            "andal: no AsyncClient on app.state: create the app with"
            " FastAPI(lifespan=andal.contrib.fastapi.lifespan(dsn)) and run it with its"
            " lifespan (uvicorn does; TestClient only inside `with TestClient(app)`)"
        )
    return client


def _given(dsn: str | Sequence[str] | None) -> str | Sequence[str]:
    if dsn is None:
        dsn = os.environ.get("ANDAL_DSN") or os.environ.get("DATABASE_URL")
    if not dsn:
        raise RuntimeError("andal: no database: pass lifespan(dsn=...) or set ANDAL_DSN or"
                           " DATABASE_URL")  # fmt: skip
    return dsn


__all__ = ["STATE_KEY", "get_client", "lifespan"]
