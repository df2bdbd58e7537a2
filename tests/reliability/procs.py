"""Real worker processes for the reliability tests.

``spawn`` starts ``python -m andal.cli worker reliability.handlers`` (the driver's own CLI)
with ``tests/`` on PYTHONPATH; ``stop`` ends it gracefully (SIGTERM, then SIGKILL after a
deadline). ``Pool`` keeps N of them, numbered, and can kill and replace one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def env(dsn: str, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, DATABASE_URL=dsn, PYTHONPATH=path, **extra)


def spawn(
    dsn: str,
    log: Path,
    *args: str,
    module: str = "reliability.handlers",
    extra_env: dict[str, str] | None = None,
) -> subprocess.Popen:
    """One driver worker process; its JSON log lines go to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "andal.cli", "worker", module, "--log-level", "debug", *args],
            env=env(dsn, **(extra_env or {})),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(proc: subprocess.Popen, timeout: float = 60.0, signal_it: bool = True) -> int:
    """SIGTERM (once: a second one is the driver's hard stop) and wait for a graceful exit;
    SIGKILL (and raise) if it does not come."""
    if signal_it and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


class Pool:
    """N worker processes with the same arguments; ``kill(i)`` SIGKILLs one and starts a new one
    in its place."""

    def __init__(
        self,
        dsn: str,
        logdir: Path,
        n: int,
        *args: str,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.dsn, self.logdir, self.args, self.extra_env = dsn, logdir, args, extra_env
        self.offsets: dict[int, int] = {}
        self.procs = [self._spawn(i) for i in range(n)]
        self.all_pids = [p.pid for p in self.procs]

    def _spawn(self, i: int) -> subprocess.Popen:
        log = self.logdir / f"w{i}.log"
        self.offsets[i] = log.stat().st_size if log.exists() else 0
        return spawn(self.dsn, log, *self.args, extra_env=self.extra_env)

    def ready(self, i: int) -> bool:
        """The i-th process has logged worker_started (its signal handlers are in place)."""
        with open(self.logdir / f"w{i}.log", "rb") as f:
            f.seek(self.offsets[i])
            return b'"event": "worker_started"' in f.read()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for i, p in enumerate(self.procs):
            while not self.ready(i):
                assert p.poll() is None, f"worker {i} exited ({p.returncode}):\n{self.logs()}"
                assert time.monotonic() < deadline, f"worker {i} did not start"
                time.sleep(0.05)

    def kill(self, i: int) -> int:
        victim = self.procs[i]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        self.procs[i] = self._spawn(i)
        self.all_pids.append(self.procs[i].pid)
        return victim.pid

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def stop(self) -> list[int]:
        """SIGTERM every process once it is up (a process still importing would die of the
        signal's default action), and wait for their graceful exits."""
        self.wait_ready()
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        return [stop(p, signal_it=False) for p in self.procs]

    def logs(self) -> str:
        return "\n".join(
            (self.logdir / f"w{i}.log").read_text()[-2000:] for i in range(len(self.procs))
        )
