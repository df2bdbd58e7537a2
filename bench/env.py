"""The run's environment: one fresh database per system, which systems and tools are here."""

from __future__ import annotations

import psycopg

from . import systems
from .common import (
    DATABASES,
    RUN_ID,
    Config,
    connect,
    drop_db,
    dsn_for,
    fresh_db,
    log,
    pgbench_path,
)


class Env:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.admin = cfg.admin_dsn
        self.pgbench = pgbench_path() is not None
        self.systems: list[str] = []
        #: databases a workload created for itself (``extra_db``), dropped with the others
        self.extra: list[str] = []
        if not self.pgbench:
            cfg.results.note("pgbench not found: the SQL-level (pgbench) cases are skipped")
        for system in DATABASES:
            ok, why = systems.available(system)
            if not ok:
                cfg.results.note(why)
                continue
            self.systems.append(system)

    @property
    def py_labels(self) -> list[str]:
        out = ["raw-py", "andal-py"]
        out += [s for s in ("procrastinate", "pgqueuer") if s in self.systems]
        return out

    @property
    def drain_labels(self) -> list[str]:
        """W1's Python systems: py_labels, and the driver with an ``async def`` handler too."""
        out = self.py_labels
        return [
            *out[: out.index("andal-py") + 1],
            "andal-py-async",
            *out[out.index("andal-py") + 1 :],
        ]

    def dbname(self, system: str) -> str:
        return DATABASES[system]

    def dsn(self, system: str) -> str:
        return dsn_for(DATABASES[system], self.admin)

    def connect(self, system: str) -> psycopg.Connection:
        return connect(self.dsn(system))

    def create(self) -> None:
        """Create every system's database afresh and install its schema."""
        for system in list(self.systems):
            log(f"creating {DATABASES[system]}")
            fresh_db(DATABASES[system], self.admin)
            try:
                systems.setup(system, self.dsn(system))
            except Exception as exc:
                if system in ("raw", "andal"):
                    raise
                self.cfg.results.note(f"{system}: setup failed ({exc}); skipped")
                self.systems.remove(system)

    def extra_db(self, label: str) -> str:
        """Create a fresh database ``andal_bench_<label>_<run>`` for one workload's own use
        (dropped by ``drop`` with the systems' databases); returns its name."""
        name = f"andal_bench_{label}_{RUN_ID}"
        log(f"creating {name}")
        fresh_db(name, self.admin)
        if name not in self.extra:
            self.extra.append(name)
        return name

    def drop(self) -> None:
        for system in DATABASES:
            drop_db(DATABASES[system], self.admin)
        for name in self.extra:
            drop_db(name, self.admin)
