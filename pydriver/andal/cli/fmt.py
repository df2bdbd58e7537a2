"""How figures are shown: ages, counts, rates, durations, ratios, sizes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any


def fmt_age(age: timedelta | None) -> str:
    if age is None:
        return "-"
    s = age.total_seconds()
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    if s < 86400:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{int(s // 86400)}d{int(s % 86400 // 3600):02d}h"


def fmt_count(n: float | None) -> str:
    if n is None:
        return "-"
    if n < 10_000:
        return f"{n:g}" if isinstance(n, float) and n != int(n) else f"{int(n)}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def fmt_rate(n: float) -> str:
    if n == 0:
        return "0"
    if n < 10:
        return f"{n:.1f}"
    return fmt_count(round(n))


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    if ms < 10:
        return f"{ms:.1f}ms"
    if ms < 1000:
        return f"{ms:.0f}ms"
    return fmt_age(timedelta(milliseconds=ms))


def fmt_pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "-"  # unreachable


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, timedelta):
        return fmt_age(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int):
        return fmt_count(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def json_default(value: Any, text: bool = False) -> Any:
    """``json.dumps``'s ``default`` for andal's rows: a time in ISO 8601 (``T`` between date
    and time), a duration in seconds; anything else as text. With ``text``: the same as one
    string for a person (a duration as ``5m00s``)."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds" if text else "microseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return fmt_age(value) if text else value.total_seconds()
    return str(value)


def json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row for ``--json``, as ``andal status --json`` writes one: a duration under
    ``<name>_s`` in seconds, a time in ISO 8601, nested values as they are."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, timedelta):
            out[f"{key}_s"] = value.total_seconds()
        elif isinstance(value, datetime):
            out[key] = value.isoformat()
        else:
            out[key] = value
    return out
