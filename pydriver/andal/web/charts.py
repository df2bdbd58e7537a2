"""Small inline SVG charts, drawn on the server (no script, no library)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 120.0, 28.0


@dataclass(frozen=True)
class Spark:
    """A polyline through ``values`` scaled to the box; ``peak`` is the value at the top."""

    points: str
    area: str
    peak: float
    last: float | None
    width: float = WIDTH
    height: float = HEIGHT


def spark(values: Sequence[float | None], peak: float | None = None) -> Spark:
    """One point per value, left (oldest) to right (newest); a missing value is drawn as 0."""
    ys = [float(v or 0) for v in values]
    top = max(peak if peak is not None else max(ys, default=0.0), 1e-9)
    n = len(ys)
    step = WIDTH / max(n - 1, 1)
    pts = [(i * step, HEIGHT - 1 - (y / top) * (HEIGHT - 2)) for i, y in enumerate(ys)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    area = f"0,{HEIGHT:.1f} {line} {WIDTH:.1f},{HEIGHT:.1f}" if pts else ""
    last = values[-1] if values else None
    return Spark(points=line, area=area, peak=top if ys and max(ys) > 0 else 0.0, last=last)
