"""A primary and a streaming hot standby on this machine, for the failover, replica-read and
restore tests.

``Pair`` initdb's a primary (``PrivateCluster``: its own port and temporary directory, as the
postgres user when run as root), clones it with ``pg_basebackup -R`` into a standby that
streams from it (``cluster_name=standby1``, so the primary's ``synchronous_standby_names``
can name it), and waits until the standby streams (``sync`` when synchronous). ``crash``
kills the primary as a lost host would (SIGKILL to the postmaster and every one of its
processes: no shutdown, no goodbye to the clients), ``promote`` makes the standby the new
primary (``pg_ctl promote``). ``dsn`` is the libpq multi-host connection string of both
servers with ``target_session_attrs=read-write``: a client reconnecting with it reaches
whichever is the primary now.

The temporary directories are named ``$ANDAL_TEST_CLUSTER_PREFIX*`` (default
``andal-failover-``) under the system's temporary directory; ``destroy`` stops and removes
both.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import psycopg

from reliability.soak import PrivateCluster

PREFIX = os.environ.get("ANDAL_TEST_CLUSTER_PREFIX", "andal-failover-")
STANDBY_NAME = "standby1"


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a postmaster's backends and helpers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            # pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """``pid`` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Pair:
    """A primary and its streaming hot standby; synchronous (the primary's commits wait for
    the standby's flush) unless ``synchronous=False``."""

    def __init__(self, synchronous: bool = True, options: str = "") -> None:
        sync = f" -c synchronous_standby_names={STANDBY_NAME}" if synchronous else ""
        self.synchronous = synchronous
        self.primary = PrivateCluster("-c wal_level=replica" + sync + " " + options, PREFIX)
        self.standby = PrivateCluster(
            f"-c cluster_name={STANDBY_NAME} -c hot_standby=on " + options, PREFIX
        )

    def start(self, timeout: float = 60.0) -> None:
        self.primary.init()
        self.primary.start()
        self.standby.root.mkdir(parents=True, exist_ok=True)
        if self.standby.as_postgres:
            import shutil

            shutil.chown(self.standby.root, "postgres", "postgres")
        self.standby._run(
            "pg_basebackup", "-D", str(self.standby.data), "-R", "-X", "stream", "-c", "fast",
            "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", "postgres",
        )  # fmt: skip
        self.standby.start()
        self.wait_streaming(timeout)

    def wait_streaming(self, timeout: float = 60.0) -> None:
        want = "sync" if self.synchronous else "async"
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.primary.dsn, autocommit=True) as c:
            while True:
                row = c.execute(
                    "select state, sync_state from pg_stat_replication where application_name = %s",
                    (STANDBY_NAME,),
                ).fetchone()
                if row == ("streaming", want):
                    return
                assert time.monotonic() < deadline, f"the standby does not stream ({row})"
                time.sleep(0.1)

    def dsn(self, dbname: str, **extra: str) -> str:
        """Both servers, the primary first, for a client that must reach the primary."""
        params = {
            "host": "127.0.0.1,127.0.0.1",
            "port": f"{self.primary.port},{self.standby.port}",
            "dbname": dbname,
            "user": "postgres",
            "target_session_attrs": "read-write",
            "connect_timeout": "3",
            **extra,
        }
        return " ".join(f"{k}={v}" for k, v in params.items())

    def standby_dsn(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.standby.port}/{dbname}"

    def primary_dsn(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.primary.port}/{dbname}"

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary.dsn, autocommit=True) as p:
            lsn = p.execute("select pg_current_wal_lsn()").fetchone()[0]
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby.dsn, autocommit=True) as s:
            while not s.execute("select pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[
                0
            ]:
                assert time.monotonic() < deadline, "the standby does not catch up"
                time.sleep(0.05)

    def crash(self) -> float:
        """SIGKILL the primary's postmaster and all its processes at once (a lost host);
        returns the monotonic time of the kill."""
        pid = int((self.primary.data / "postmaster.pid").read_text().split()[0])
        victims = children_of(pid)
        os.kill(pid, signal.SIGKILL)
        at = time.monotonic()
        for child in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(alive(p) for p in [pid, *victims]):
            assert time.monotonic() < deadline, "the primary's processes do not die"
            time.sleep(0.02)
        (self.primary.data / "postmaster.pid").unlink(missing_ok=True)
        return at

    def promote(self) -> None:
        self.standby._run("pg_ctl", "-D", str(self.standby.data), "-w", "-t", "60", "promote")

    def destroy(self) -> None:
        for cluster in (self.standby, self.primary):
            cluster.destroy()
