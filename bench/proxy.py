"""A counting PostgreSQL wire-protocol proxy: how many statements and round trips a client sends.

``pg_stat_statements`` needs ``shared_preload_libraries`` (a server restart); this counts at the
wire instead, the same way for every client (libpq, psycopg, asyncpg). It answers an SSL or
GSS request with "N" (clients must accept plaintext: ``sslmode=disable`` or ``prefer``), then
forwards everything and counts the frontend messages by type:

* statements = ``Q`` (simple query) + ``E`` (execute of an extended-protocol portal);
* round trips = ``Q`` + ``S`` (each waits for a ReadyForQuery).

Only for the cost pass: it adds latency, so nothing timed goes through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections import Counter

SSL_REQUEST = 80877103
GSS_REQUEST = 80877104


class CountingProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, int(upstream_port))
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-proxy", daemon=True)
        self.port = 0
        self._server: asyncio.base_events.Server | None = None

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the counting proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            c = dict(self.counts)
        c["statements"] = c.get("Q", 0) + c.get("E", 0)
        c["round_trips"] = c.get("Q", 0) + c.get("S", 0)
        return c

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_w: asyncio.StreamWriter | None = None
        pipe: asyncio.Task | None = None
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
            while True:  # startup: no type byte
                head = await reader.readexactly(8)
                length, code = struct.unpack("!ii", head)
                body = await reader.readexactly(length - 8)
                if code in (SSL_REQUEST, GSS_REQUEST):
                    writer.write(b"N")
                    await writer.drain()
                    continue
                up_w.write(head + body)
                break
            pipe = asyncio.create_task(self._pipe(up_r, writer))
            while True:
                kind = await reader.readexactly(1)
                size = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack("!i", size)[0] - 4)
                with self._lock:
                    self.counts[kind.decode("latin-1")] += 1
                up_w.write(kind + size + body)
                if (
                    kind in (b"S", b"Q", b"H", b"X")
                    or up_w.transport.get_write_buffer_size() > 65536
                ):
                    await up_w.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            if pipe is not None:
                pipe.cancel()
            for w in (writer, up_w):
                if w is not None:
                    with contextlib.suppress(Exception):
                        w.close()

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while True:
                data = await src.read(65536)
                if not data:
                    break
                dst.write(data)
                await dst.drain()
        with contextlib.suppress(Exception):
            dst.close()
