"""Start and stop real worker processes (``python -m andal.cli worker ...``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDING = str(HERE / "recording.py")


def spawn_worker(dsn: str, log: Path, *args: str, module: str = RECORDING) -> subprocess.Popen:
    """Start one worker process; its JSON log lines go to ``log``."""
    env = dict(os.environ, DATABASE_URL=dsn)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "andal.cli", "worker", module, *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop_worker(proc: subprocess.Popen, timeout: float = 30.0) -> int:
    """SIGTERM, wait for a graceful exit; SIGKILL if it does not come."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
