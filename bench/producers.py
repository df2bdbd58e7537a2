"""Producers for the Python systems: enqueue one job per transaction, or 100 in one.

``Producer(label, dsn)`` opens what the system needs once; ``one(payload)`` enqueues a single
job in its own transaction, ``many(payloads)`` enqueues a list in one transaction.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import systems


class Producer:
    def __init__(self, label: str, dsn: str, notify: bool = True) -> None:
        self.label = label
        self.dsn = dsn
        self.notify = notify
        self._conn: psycopg.Connection | None = None
        self._app: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._aconn: Any = None
        self._queries: Any = None

    def __enter__(self) -> Producer:
        if self.label in ("raw-py", "andal-py"):
            self._conn = psycopg.connect(self.dsn, autocommit=True)
        elif self.label == "procrastinate":
            self._app = systems.procrastinate_app(self.dsn)
            self._app.open()
            self._task = self._app.tasks["noop"]
        elif self.label == "pgqueuer":
            import asyncpg
            from pgqueuer import AsyncpgDriver, Queries

            self._loop = asyncio.new_event_loop()
            self._aconn = self._loop.run_until_complete(asyncpg.connect(self.dsn))
            self._queries = Queries(AsyncpgDriver(self._aconn))
        else:
            raise ValueError(self.label)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._app is not None:
            self._app.close()
        if self._loop is not None:
            self._loop.run_until_complete(self._aconn.close())
            self._loop.close()

    def one(self, payload: dict[str, Any]) -> None:
        if self.label == "raw-py":
            systems.raw_enqueue(self._conn, payload, notify=self.notify)
        elif self.label == "andal-py":
            systems.andal_enqueue(self._conn, payload)
        elif self.label == "procrastinate":
            self._task.defer(**payload)
        else:
            self._loop.run_until_complete(
                self._queries.enqueue(systems.QUEUE, json.dumps(payload).encode(), 0)
            )

    def many(self, payloads: list[dict[str, Any]]) -> None:
        if self.label == "raw-py":
            self._conn.execute(
                "insert into bench_jobs (payload) select * from unnest(%s::jsonb[])",
                ([Jsonb(p) for p in payloads],),
            )
        elif self.label == "andal-py":
            from andal import enqueue_many

            enqueue_many(self._conn, payloads, systems.QUEUE)
        elif self.label == "procrastinate":
            self._task.batch_defer(*payloads)
        else:
            k = len(payloads)
            self._loop.run_until_complete(
                self._queries.enqueue(
                    [systems.QUEUE] * k, [json.dumps(p).encode() for p in payloads], [0] * k
                )
            )
