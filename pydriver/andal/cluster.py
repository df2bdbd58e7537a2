"""A private, throwaway PostgreSQL cluster (initdb + pg_ctl on a free port of 127.0.0.1), for
``make demo`` when no server answers, and for tests that stop and start a server of their own.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def pg_bin(name: str) -> str:
    """Path of a PostgreSQL server binary: /usr/lib/postgresql/15/bin first, then $PATH."""
    candidates = [Path("/usr/lib/postgresql/15/bin") / name]
    candidates += sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    for c in candidates:
        if c.is_file():
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} not found (install PostgreSQL server binaries)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A throwaway PostgreSQL cluster in ``root`` on a free TCP port of 127.0.0.1.

    initdb refuses to run as root: then every server command runs as the ``postgres`` user
    (runuser, or su), and ``root`` is handed to that user.
    """

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.data = root / "data"
        self.log = root / "server.log"
        self.port = port or free_port()
        self.as_postgres = os.geteuid() == 0

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        cmd = list(argv)
        if self.as_postgres:
            if shutil.which("runuser"):
                cmd = ["runuser", "-u", "postgres", "--", *cmd]
            else:
                cmd = ["su", "postgres", "-c", shlex.join(cmd)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {(out.stderr or out.stdout).strip()}")

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8"
        )

    def start(self) -> str:
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                "-c unix_socket_directories=''",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=100",
            ]
        )
        self._run(
            pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip
        return self.dsn

    def stop(self, mode: str = "fast") -> None:
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def destroy(self) -> None:
        with_server = (self.data / "postmaster.pid").exists()
        if with_server:
            with contextlib.suppress(RuntimeError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def private_root() -> Path:
    """``.andal/cluster`` in the working directory, or a temp dir the postgres user can reach."""
    root = Path.cwd() / ".andal" / f"cluster-{os.getpid()}"
    if os.geteuid() != 0:
        return root
    probe = subprocess.run(
        ["runuser", "-u", "postgres", "--", "test", "-x", str(Path.cwd())], capture_output=True
    )
    if probe.returncode == 0:
        return root
    return Path(tempfile.mkdtemp(prefix="andal-demo-"))
