"""Jinja filters that format the figures the SQL functions return (display only)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any


def age(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = float(seconds)
    sign, s = ("-", -s) if s < 0 else ("", s)
    if s < 60:
        return f"{sign}{s:.1f}s"
    if s < 3600:
        return f"{sign}{int(s // 60)}m{int(s % 60):02d}s"
    if s < 86400:
        return f"{sign}{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{sign}{int(s // 86400)}d{int(s % 86400 // 3600):02d}h"


_UNITS = (("day", 86400), ("h", 3600), ("min", 60), ("s", 1))


def span(value: timedelta | str | None, none: str = "–") -> str:
    """A setting's interval in words: ``5 s``, ``1 h``, ``1 h 30 min``, ``7 days``
    (``none`` when there is none). Its two largest units, the rest left out."""
    if value is None:
        return none
    if not isinstance(value, timedelta):
        return str(value)
    left, parts = round(value.total_seconds()), []
    if left < 1:
        return f"{value.total_seconds() * 1000:.0f} ms"
    for unit, size in _UNITS:
        n, left = divmod(left, size)
        if n:
            parts.append(f"{n} {unit}s" if unit == "day" and n > 1 else f"{n} {unit}")
    return " ".join(parts[:2])


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    v = float(value)
    return f"{v:.1f} ms" if v < 1000 else f"{v / 1000:.2f} s"


def pct(ratio: float | None) -> str:
    return "–" if ratio is None else f"{float(ratio) * 100:.1f}%"


def count(n: Any) -> str:
    if n is None:
        return "–"
    v = float(n)
    return f"{int(v):,}" if v == int(v) else f"{v:,.2f}"


def size(n: float | None) -> str:
    if n is None:
        return "–"
    v = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if v < 1024 or unit == "GB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} GB"


def when(t: datetime | None) -> str:
    return "–" if t is None else t.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def pretty(value: Any) -> str:
    """A JSON value indented for a <pre> (text; the template escapes it)."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


FILTERS = {
    "age": age,
    "span": span,
    "ms": ms,
    "pct": pct,
    "count": count,
    "size": size,
    "when": when,
    "pretty": pretty,
}
