"""Worker processes for the Python systems, started with ``spawn`` and released together.

Each process builds its system's worker, reports ready, waits for ``go``, then runs no-op
handlers. A handler counts its job in a shared counter, records the earliest start time and,
when the payload carries ``t`` (the producer's clock just before the enqueue), sends the
pickup latency to the parent. The parent decides when the work is done (the counter, then
the system's own table) and ends the processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg

from . import systems

CTX = mp.get_context("spawn")

#: Python systems: the label used in results -> (database system, runner).
PY_SYSTEMS = {
    "raw-py": "raw",
    "andal-py": "andal",
    "andal-py-async": "andal",
    "procrastinate": "procrastinate",
    "pgqueuer": "pgqueuer",
}


@dataclass
class Shared:
    counter: Any
    first: Any
    ready: Any
    go: Any
    stop: Any
    lat: Any  # a queue of latencies (s), or None
    cpu: Any  # summed process CPU seconds of the workers

    @classmethod
    def make(cls, latencies: bool = False) -> Shared:
        return cls(
            counter=CTX.Value("q", 0),
            first=CTX.Value("d", 0.0),
            ready=CTX.Value("i", 0),
            go=CTX.Event(),
            stop=CTX.Event(),
            lat=CTX.Queue() if latencies else None,
            cpu=CTX.Value("d", 0.0),
        )


class _Handle:
    """What a handler calls for each job (in the worker process)."""

    def __init__(self, sh: Shared) -> None:
        self.sh = sh
        self.seen_first = False

    def __call__(self, payload: Any) -> None:
        now = time.time()
        sh = self.sh
        if not self.seen_first:
            self.seen_first = True
            with sh.first.get_lock():
                if sh.first.value == 0 or now < sh.first.value:
                    sh.first.value = now
        if sh.lat is not None and isinstance(payload, dict) and "t" in payload:
            sh.lat.put(now - float(payload["t"]))
        with sh.counter.get_lock():
            sh.counter.value += 1


_CPU_AT_GO = [0.0]


def _cpu_now() -> float:
    t = os.times()
    return t.user + t.system


def _ready_then_wait(sh: Shared) -> None:
    with sh.ready.get_lock():
        sh.ready.value += 1
    sh.go.wait()
    _CPU_AT_GO[0] = _cpu_now()  # imports and connection setup are not the workload's


def _report_cpu(sh: Shared) -> None:
    used = _cpu_now() - _CPU_AT_GO[0]
    with sh.cpu.get_lock():
        sh.cpu.value += used


def child(label: str, dsn: str, opts: dict[str, Any], sh: Shared) -> None:
    """Entry point of a worker process."""
    handle = _Handle(sh)
    stop_cpu = threading.Thread(target=lambda: (sh.stop.wait(), _report_cpu(sh)), daemon=True)
    stop_cpu.start()
    if label == "raw-py":
        _raw_worker(dsn, opts, sh, handle)
    elif label == "andal-py":
        _andal_worker(dsn, opts, sh, handle)
    elif label == "andal-py-async":
        _andal_worker(dsn, opts, sh, handle, use_async=True)
    elif label == "procrastinate":
        asyncio.run(_procrastinate_worker(dsn, opts, sh, handle))
    elif label == "pgqueuer":
        asyncio.run(_pgqueuer_worker(dsn, opts, sh, handle))
    else:
        raise ValueError(label)
    stop_cpu.join(timeout=2)


def _raw_worker(dsn: str, opts: dict[str, Any], sh: Shared, handle: _Handle) -> None:
    """The raw loop: claim a batch (SKIP LOCKED), run, delete; LISTEN when the queue is dry."""
    batch = int(opts.get("batch", 1))
    poll = float(opts.get("poll", 1.0))
    params = {"batch": batch, "worker": f"raw-{os.getpid()}"}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("listen bench_jobs")
        _ready_then_wait(sh)
        while not sh.stop.is_set():
            rows = conn.execute(systems.RAW_CLAIM_PY, params).fetchall()
            if not rows:
                for _ in conn.notifies(timeout=poll, stop_after=1):
                    pass
                continue
            for _id, _tok, payload in rows:
                handle(payload)
            if len(rows) == 1:
                conn.execute(systems.RAW_COMPLETE_ONE_PY, (rows[0][0], rows[0][1]))
            else:
                conn.execute(
                    systems.RAW_COMPLETE_MANY_PY, ([r[0] for r in rows], [r[1] for r in rows])
                )


def _andal_worker(
    dsn: str, opts: dict[str, Any], sh: Shared, handle: _Handle, use_async: bool = False
) -> None:
    """``andal.Worker`` with a no-op handler: a plain function (run in the worker's threads),
    or with ``use_async`` an ``async def`` (awaited on the worker's event loop)."""
    import andal

    async def async_noop(job: Any) -> None:
        handle(job.payload)

    def sync_noop(job: Any) -> None:
        handle(job.payload)

    batch = int(opts.get("batch", 1))
    worker = andal.Worker(
        dsn,
        {systems.QUEUE: async_noop if use_async else sync_noop},
        concurrency=int(opts.get("concurrency", batch)),
        batch=batch,
        poll=float(opts.get("poll", 1.0)),
    )
    _ready_then_wait(sh)
    threading.Thread(target=lambda: (sh.stop.wait(), worker.stop()), daemon=True).start()
    worker.run(install_signals=False)


async def _wait_event(ev: Any) -> None:
    await asyncio.get_running_loop().run_in_executor(None, ev.wait)


async def _procrastinate_worker(
    dsn: str, opts: dict[str, Any], sh: Shared, handle: _Handle
) -> None:
    concurrency = int(opts.get("concurrency", opts.get("batch", 1)))
    app = systems.procrastinate_app(
        dsn, handler=handle, min_size=1, max_size=max(10, concurrency + 2)
    )
    async with app.open_async():
        await asyncio.get_running_loop().run_in_executor(None, _ready_then_wait, sh)
        task = asyncio.create_task(
            app.run_worker_async(
                queues=[systems.QUEUE],
                concurrency=concurrency,
                wait=True,
                install_signal_handlers=False,
                listen_notify=True,
                fetch_job_polling_interval=float(opts.get("poll", 1.0)),
            )
        )
        await _wait_event(sh.stop)
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 5)


async def _pgqueuer_worker(dsn: str, opts: dict[str, Any], sh: Shared, handle: _Handle) -> None:
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries, QueueManager

    batch = int(opts.get("batch", 1))
    conn = await asyncpg.connect(dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    async def noop(job: Any) -> None:
        handle(_json(job.payload))

    qm.entrypoint(systems.QUEUE)(noop)
    await asyncio.get_running_loop().run_in_executor(None, _ready_then_wait, sh)

    async def stopper() -> None:
        await _wait_event(sh.stop)
        qm.shutdown.set()

    stop_task = asyncio.create_task(stopper())
    try:
        await qm.run(
            batch_size=batch,
            dequeue_timeout=timedelta(seconds=float(opts.get("poll", 1.0))),
        )
    finally:
        stop_task.cancel()
        with contextlib.suppress(BaseException):
            await conn.close()


def _json(payload: bytes | None) -> Any:
    import json

    return json.loads(payload) if payload else None


# -- the parent's side ----------------------------------------------------------------------


class Pool:
    """``procs`` worker processes of one system, released together by ``go()``."""

    def __init__(
        self, label: str, dsn: str, procs: int, opts: dict[str, Any], latencies: bool = False
    ) -> None:
        self.label = label
        self.sh = Shared.make(latencies)
        self.procs = [
            CTX.Process(target=child, args=(label, dsn, opts, self.sh), daemon=True)
            for _ in range(procs)
        ]
        self.t_go = 0.0

    def start(self, timeout: float = 60.0) -> Pool:
        for p in self.procs:
            p.start()
        deadline = time.monotonic() + timeout
        while self.sh.ready.value < len(self.procs):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.label}: workers not ready after {timeout} s")
            if any(p.exitcode not in (None, 0) for p in self.procs):
                raise RuntimeError(f"{self.label}: a worker process died while starting")
            time.sleep(0.01)
        return self

    def go(self) -> float:
        self.t_go = time.time()
        self.sh.go.set()
        return self.t_go

    @property
    def count(self) -> int:
        return int(self.sh.counter.value)

    @property
    def first(self) -> float:
        return float(self.sh.first.value)

    def alive(self) -> bool:
        return all(p.exitcode in (None, 0) for p in self.procs)

    def wait_count(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.count < n:
            if time.monotonic() > deadline or not self.alive():
                return False
            time.sleep(0.002)
        return True

    def stop(self, grace: float = 5.0) -> float:
        """Stop the workers; returns their summed CPU seconds (0 when not reported)."""
        self.sh.stop.set()
        deadline = time.monotonic() + grace
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.terminate()
                p.join(2)
            if p.is_alive():
                p.kill()
                p.join(2)
        return float(self.sh.cpu.value)

    def latencies(self, n: int, timeout: float = 5.0) -> list[float]:
        out: list[float] = []
        if self.sh.lat is None:
            return out
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                out.append(self.sh.lat.get(timeout=0.1))
        return out

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.sh.stop.is_set():
            self.stop(grace=2.0)


def drain(
    label: str,
    dsn: str,
    n: int,
    procs: int,
    opts: dict[str, Any],
    timeout: float,
) -> dict[str, float]:
    """Run ``procs`` workers until the n preloaded jobs are gone. Jobs/s from the first
    handler start to the moment the system's table holds no unfinished job."""
    system = PY_SYSTEMS[label]
    polls = 0
    with (
        Pool(label, dsn, procs, opts).start() as pool,
        psycopg.connect(dsn, autocommit=True) as conn,
    ):
        pool.go()
        if not pool.wait_count(n, timeout):
            raise RuntimeError(f"{label}: {pool.count}/{n} jobs handled before the timeout")
        deadline = time.monotonic() + 30
        while True:
            polls += 1
            if systems.remaining(system, conn) == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{label}: jobs left unfinished after the handlers ran")
            time.sleep(0.002)
        t_end = time.time()
        first = pool.first
        cpu = pool.stop()
    seconds = t_end - first
    return {"jobs_per_s": n / seconds, "seconds": seconds, "worker_cpu_s": cpu, "polls": polls}
