"""Support of the soak tests: a rate-limited producer that survives a lost server, a periodic
sampler, a private PostgreSQL cluster to crash, and the database clock."""

from __future__ import annotations

import contextlib
import os
import random
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from reliability import history


def db_now(conn: psycopg.Connection) -> Any:
    return conn.execute("select clock_timestamp()").fetchone()[0]


class Producer(threading.Thread):
    """Enqueue ``rate`` jobs a second in chunks (``history.enqueue_many``: each chunk and its
    record commit together) until ``total`` are acknowledged or ``stop()``. Payloads come
    from ``payload(rng)``; the queue of each chunk from ``queues`` in turn. A lost connection
    is retried with backoff: only chunks whose commit was acknowledged count as ``acked``."""

    def __init__(
        self,
        dsn: str,
        queues: list[str],
        rate: float,
        total: int | None = None,
        chunk: int = 20,
        payload: Callable[[random.Random], Any] = lambda rng: {},
        seed: int = 0,
        category: Callable[[random.Random], str | None] | None = None,
    ) -> None:
        super().__init__(daemon=True, name="rel-producer")
        self.dsn, self.queues, self.rate, self.total, self.chunk = dsn, queues, rate, total, chunk
        self.payload, self.category = payload, category
        self.rng = random.Random(seed)
        self.acked: list[int] = []
        self.failures = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        conn: psycopg.Connection | None = None
        start = time.monotonic()
        i = 0
        try:
            while not self._halt.is_set() and (self.total is None or len(self.acked) < self.total):
                n = (
                    self.chunk
                    if self.total is None
                    else min(self.chunk, self.total - len(self.acked))
                )
                due = start + (len(self.acked) + n) / self.rate
                if due > time.monotonic():
                    self._halt.wait(due - time.monotonic())
                queue = self.queues[i % len(self.queues)]
                i += 1
                payloads = [self.payload(self.rng) for _ in range(n)]
                category = self.category(self.rng) if self.category else None
                try:
                    if conn is None or conn.closed or conn.broken:
                        conn = psycopg.connect(
                            self.dsn, autocommit=True, connect_timeout=5,
                            application_name="rel producer",
                        )  # fmt: skip
                    ids = history.enqueue_many(conn, payloads, queue, category=category)
                except psycopg.OperationalError:
                    self.failures += 1
                    if conn is not None:
                        conn.close()
                    conn = None
                    self._halt.wait(0.2)
                    continue
                self.acked.extend(ids)
        except BaseException as exc:
            self.error = exc
        finally:
            if conn is not None:
                conn.close()


class Sampler(threading.Thread):
    """Call ``sample(conn)`` every ``every`` seconds on its own connection; keeps the rows."""

    def __init__(self, dsn: str, every: float, sample: Callable[[psycopg.Connection], Any]):
        super().__init__(daemon=True, name="rel-sampler")
        self.dsn, self.every, self.sample = dsn, every, sample
        self.rows: list[Any] = []
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        self.join(30)

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True, application_name="rel sampler") as c:
                while not self._halt.is_set():
                    self.rows.append(self.sample(c))
                    self._halt.wait(self.every)
        except BaseException as exc:
            self.error = exc


class PrivateCluster:
    """A throwaway PostgreSQL cluster on a free port, its files in a temporary directory.

    initdb refuses to run as root, so as root every server command runs as the postgres user
    (``runuser -u postgres``, else ``su postgres -c``). Commits are durable against a server
    crash (synchronous_commit on; fsync off only risks an OS crash, which is not tested).
    """

    def __init__(self, options: str = "", prefix: str = "andal-rel-pg-") -> None:
        import tempfile
        from pathlib import Path

        from andal.cluster import free_port

        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        self.options = options

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        from andal.cluster import pg_bin

        cmd = [pg_bin(argv[0]), *argv[1:]]
        if self.as_postgres:
            if shutil.which("runuser"):
                cmd = ["runuser", "-u", "postgres", "--", *cmd]
            else:
                cmd = ["su", "postgres", "-c", shlex.join(cmd)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {(out.stderr or out.stdout).strip()}")

    def init(self) -> None:
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8")

    def start(self) -> str:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
            " -c fsync=off -c synchronous_commit=on -c max_connections=200"
            " -c shared_buffers=128MB " + self.options
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "-t", "120", "start")  # fmt: skip
        return self.dsn

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "120", "stop")

    def crash_restart(self) -> None:
        """``pg_ctl restart -m immediate``: every backend is killed without a shutdown
        checkpoint, and the server starts with crash recovery (same options)."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-m", "immediate",
                  "-w", "-t", "120", "restart")  # fmt: skip

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def private_database(options: str = ""):
    """A database ``t`` with andal and andal_check installed, in a new private cluster started
    with the extra server ``options``; yields its DSN and destroys the cluster after."""
    from psycopg.conninfo import make_conninfo

    from andal.install import install

    cluster = PrivateCluster(options)
    try:
        cluster.init()
        server = cluster.start()
        with psycopg.connect(server, autocommit=True) as c:
            c.execute("create database t")
        dsn = make_conninfo(server, dbname="t")
        install(dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            history.install(c)
        yield dsn
    finally:
        cluster.destroy()
