"""The local store: the process's copies of shared cache entries, bounded by count and bytes
(least recently used out first), with the bookkeeping that keeps a stale copy out.

A fetch in flight (``Inflight``) records the highest version of its key read from the change
log meanwhile: a copy fetched at a lower version is not stored (``admit``). A flush poisons
every fetch in flight. Read counters (per job type and outcome) and the follower's event
counters live here too, under the same lock, so a read takes one lock.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The outcomes of a read reported to ``cache.report_reads``.
REPORTED = ("local_hit", "shared_hit", "stale_hit", "miss")


@dataclass(slots=True)
class Entry:
    value: Any
    version: int
    checksum: str | None
    size: int
    deadline: float  # time.monotonic() after which the entry is expired


class Inflight:
    """A fetch of a key in progress: the highest change version read from the log meanwhile."""

    __slots__ = ("refs", "max_seen", "poisoned")

    def __init__(self) -> None:
        self.refs = 0
        self.max_seen = 0
        self.poisoned = False


class Store:
    """The entries, the fetches in flight and the counters, under one lock (``lock``)."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be positive")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.bytes = 0
        self.inflight: dict[str, Inflight] = {}
        self.counts: Counter[tuple[str, str]] = Counter()
        self.reported: Counter[tuple[str, str]] = Counter()
        self.events: Counter[str] = Counter()

    # -- reads ----------------------------------------------------------------------------

    def local(
        self, key: str, now: float, live: bool, min_version: int | None, label: str
    ) -> tuple[Entry | None, Inflight | None]:
        """The live local copy of ``key`` (counted as a local hit), or else a registered
        fetch in flight for it (the caller releases it)."""
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None:
                if entry.deadline <= now:
                    self.drop(key)
                    entry = None
                elif not live:
                    entry = None
                elif min_version is not None and entry.version < min_version:
                    self.counts[(label, "refetch")] += 1
                    entry = None
                else:
                    self.entries.move_to_end(key)
                    self.counts[(label, "local_hit")] += 1
                    return entry, None
            return None, self._acquire_locked(key)

    def acquire(self, key: str) -> Inflight:
        with self.lock:
            return self._acquire_locked(key)

    def _acquire_locked(self, key: str) -> Inflight:
        inflight = self.inflight.get(key)
        if inflight is None:
            inflight = self.inflight[key] = Inflight()
        inflight.refs += 1
        return inflight

    def release(self, key: str, inflight: Inflight) -> None:
        with self.lock:
            inflight.refs -= 1
            if inflight.refs <= 0 and self.inflight.get(key) is inflight:
                del self.inflight[key]

    def count(self, label: str, outcome: str) -> None:
        with self.lock:
            self.counts[(label, outcome)] += 1

    # -- writes ---------------------------------------------------------------------------

    def admit(
        self,
        key: str,
        value: Any,
        version: int,
        checksum: str | None,
        size: int | None,
        life: float,
        inflight: Inflight,
    ) -> bool:
        """Store a copy fetched (or written) at ``version`` for ``life`` seconds, unless a
        newer change of the key was read from the log while it was in flight."""
        if life <= 0:
            return False
        size = size if size is not None else len(json.dumps(value))
        if size > self.max_bytes:
            return False
        with self.lock:
            if inflight.poisoned or inflight.max_seen > version:
                self.events["discarded_fetches"] += 1
                return False
            old = self.entries.get(key)
            if old is not None:
                if old.version > version:
                    return False
                self.drop(key)
            self.entries[key] = Entry(value, version, checksum, size, time.monotonic() + life)
            self.bytes += size
            while len(self.entries) > self.max_entries or self.bytes > self.max_bytes:
                _, gone = self.entries.popitem(last=False)
                self.bytes -= gone.size
                self.events["evictions"] += 1
        return True

    def drop(self, key: str) -> bool:
        """Remove a local entry (the caller holds the lock); whether there was one."""
        gone = self.entries.pop(key, None)
        if gone is None:
            return False
        self.bytes -= gone.size
        return True

    def discard(self, key: str) -> None:
        with self.lock:
            self.drop(key)

    def flush_locked(self) -> int:
        """Drop every entry and poison every fetch in flight (the caller holds the lock);
        returns how many entries were dropped."""
        had = len(self.entries)
        self.entries.clear()
        self.bytes = 0
        for inflight in self.inflight.values():
            inflight.poisoned = True
        return had

    def clear(self) -> None:
        with self.lock:
            self.flush_locked()

    # -- the change log -------------------------------------------------------------------

    def apply(self, changes: Iterable[tuple[str, int]]) -> int:
        """Apply changes read from the log (key, version): drop older copies, and raise the
        bar of fetches in flight. Returns how many changes were applied."""
        applied = 0
        with self.lock:
            for key, version in changes:
                applied += 1
                entry = self.entries.get(key)
                if entry is not None and entry.version < version:
                    self.drop(key)
                    self.events["invalidations"] += 1
                inflight = self.inflight.get(key)
                if inflight is not None and version > inflight.max_seen:
                    inflight.max_seen = version
        return applied

    # -- counters -------------------------------------------------------------------------

    def unreported(self) -> dict[str, dict[str, int]]:
        """The reportable counts since the last report, marked as sent (see ``unsend``)."""
        with self.lock:
            delta: dict[str, dict[str, int]] = {}
            for (label, outcome), n in self.counts.items():
                sent = self.reported[(label, outcome)]
                if outcome in REPORTED and n > sent:
                    delta.setdefault(label, {})[outcome] = n - sent
            for label, counts in delta.items():
                for outcome, n in counts.items():
                    self.reported[(label, outcome)] += n
            return delta

    def unsend(self, delta: dict[str, dict[str, int]]) -> None:
        """A report that was not sent: send it with the next one."""
        with self.lock:
            for label, counts in delta.items():
                for outcome, n in counts.items():
                    self.reported[(label, outcome)] -= n

    def hit_ratio(self, job_type: str | None) -> float:
        with self.lock:
            hits = reads = 0
            for (label, outcome), n in self.counts.items():
                if job_type is not None and label != job_type:
                    continue
                if outcome in ("local_hit", "shared_hit"):
                    hits += n
                    reads += n
                elif outcome in ("miss", "stale_hit"):
                    reads += n
            return hits / reads if reads else 0.0

    def by_job_type(self) -> dict[str, dict[str, int]]:
        """The read counters per job type (the caller holds the lock)."""
        by_type: dict[str, dict[str, int]] = {}
        for (label, outcome), n in self.counts.items():
            by_type.setdefault(label, {})[outcome] = n
        return by_type


def lifetime(ttl_left: float | None, local_ttl: float | None) -> float:
    """How long a local copy may live: the shared entry's remaining TTL, capped by the local
    one (forever when neither is set)."""
    life = ttl_left if ttl_left is not None else math.inf
    return life if local_ttl is None else min(life, local_ttl)
