"""What a handler declares besides its function: its queue's policy (``Policy``, ``Backoff``)
and schedules into it (``Periodic``). Only their types are checked here; every rule (ranges,
known kinds, cron syntax) is the SQL's, applied when a worker starts (``apply_policy``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..values import Seconds

_SECONDS = (int, float, timedelta)


def _check(what: str, value: Any, kinds: tuple[type, ...], wanted: str) -> None:
    """A ``TypeError`` unless ``value`` is None or of ``kinds`` (a bool is no number)."""
    if value is None:
        return
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise TypeError(f"{what} must be {wanted} (got {type(value).__name__})")


@dataclass(frozen=True)
class Backoff:
    """``configure_queue``'s backoff options: ``kind`` (its ``backoff``: "linear" or
    "exponential"), ``base`` (``backoff_base``), ``cap`` (``backoff_cap``) and ``jitter``;
    None: not said (the database's value stays)."""

    kind: str | None = None
    base: Seconds | None = None
    cap: Seconds | None = None
    jitter: float | None = None

    def __post_init__(self) -> None:
        _check("Backoff.kind", self.kind, (str,), "a string")
        _check("Backoff.base", self.base, _SECONDS, "seconds or a timedelta")
        _check("Backoff.cap", self.cap, _SECONDS, "seconds or a timedelta")
        _check("Backoff.jitter", self.jitter, (int, float), "a number")


@dataclass(frozen=True)
class Policy:
    """A queue's policy as its handler declares it: ``configure_queue``'s ``timeout``,
    ``max_attempts``, ``lease`` and ``backoff`` (a kind, or a ``Backoff``). None: not said."""

    timeout: Seconds | None = None
    max_attempts: int | None = None
    lease: Seconds | None = None
    backoff: str | Backoff | None = None

    def __post_init__(self) -> None:
        _check("timeout", self.timeout, _SECONDS, "seconds or a timedelta")
        _check("max_attempts", self.max_attempts, (int,), "an integer")
        _check("lease", self.lease, _SECONDS, "seconds or a timedelta")
        _check("backoff", self.backoff, (str, Backoff), "a string or an andal.Backoff")

    def keywords(self) -> dict[str, Any]:
        """The keywords said (as ``Registry.add`` takes them)."""
        said = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: value for name, value in said.items() if value is not None}

    def __bool__(self) -> bool:
        return bool(self.keywords())


#: The fields of a ``Periodic`` that are ``queue.schedule``'s options of the same name (its
#: ``every`` too, as an interval).
SCHEDULE_FIELDS = (
    "cron", "every", "payload", "timezone", "missed", "catch_up", "category", "priority",
    "enabled",
)  # fmt: skip


@dataclass(frozen=True)
class Periodic:
    """A schedule declared in the code (``queue.schedule``): ``cron`` or ``every`` (exactly
    one, the SQL says) into ``queue`` (None: the queue of the handler ``fn`` it decorates).
    Fields left None take ``queue.schedule``'s default when it is written, and are not
    compared with the database's definition."""

    name: str
    cron: str | None = None
    queue: str | None = None
    payload: Any = None
    timezone: str | None = None
    every: Seconds | None = None
    missed: str | None = None
    catch_up: int | None = None
    category: str | None = None
    priority: int | None = None
    enabled: bool | None = None
    fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a schedule's name must be a non-empty string")
        of = f"of schedule {self.name!r}"
        for name in ("cron", "queue", "timezone", "missed", "category"):
            _check(f"{name} {of}", getattr(self, name), (str,), "a string")
        for name in ("catch_up", "priority"):
            _check(f"{name} {of}", getattr(self, name), (int,), "an integer")
        _check(f"every {of}", self.every, _SECONDS, "seconds or a timedelta")
        _check(f"enabled {of}", self.enabled, (bool,), "a bool")
