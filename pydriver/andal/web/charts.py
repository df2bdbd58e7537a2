"""Small inline SVG charts, drawn on the server (no script, no library): a line over the
per-minute figures with its axes written on it: the value at the top with its unit, a zero
line, and the first and last minute of the range below."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

WIDTH, HEIGHT = 160.0, 44.0
#: The plot's band inside the box: the peak's label above it, the times below it.
PLOT_TOP, PLOT_BOTTOM = 10.0, 33.0


@dataclass(frozen=True)
class Spark:
    """A polyline through ``values`` scaled to the plot band; ``peak`` is the value at its top,
    ``top`` that value written with its unit, ``start``/``end`` the range's first and last
    minute (UTC, ``HH:MM``), ``label`` all of it in words (the chart's title)."""

    points: str
    area: str
    peak: float
    last: float | None
    top: str = ""
    start: str = ""
    end: str = ""
    label: str = ""
    width: float = WIDTH
    height: float = HEIGHT
    plot_top: float = PLOT_TOP
    plot_bottom: float = PLOT_BOTTOM


def _minute(t: datetime | None) -> str:
    return t.strftime("%H:%M") if t is not None else ""


def _value(v: float, unit: str) -> str:
    if unit == "%":
        return f"{v * 100:.0f} %"
    return f"{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{v:.1f} {unit}"


def spark(
    values: Sequence[float | None],
    peak: float | None = None,
    unit: str = "jobs/min",
    times: Sequence[datetime] | None = None,
    what: str = "completed",
) -> Spark:
    """One point per value, left (oldest) to right (newest); a missing value is drawn as 0.
    ``unit``: ``"%"`` for a rate in 0..1 (written as a percentage), else the unit written
    after the value; ``times``: the minute of each value (the range's ends are written)."""
    ys = [float(v or 0) for v in values]
    top = max(peak if peak is not None else max(ys, default=0.0), 1e-9)
    step = WIDTH / max(len(ys) - 1, 1)
    band = PLOT_BOTTOM - PLOT_TOP
    pts = [(i * step, PLOT_BOTTOM - (y / top) * band) for i, y in enumerate(ys)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    area = f"0,{PLOT_BOTTOM:.1f} {line} {WIDTH:.1f},{PLOT_BOTTOM:.1f}" if pts else ""
    shown = top if ys and (peak is not None or max(ys) > 0) else 0.0
    start, end = (_minute(times[0]), _minute(times[-1])) if times else ("", "")
    span = f"{start}–{end} UTC" if start else "last hour, no data yet"
    label = f"{what} per minute, {span}, top of the scale {_value(shown, unit)}"
    return Spark(
        points=line, area=area, peak=shown, last=values[-1] if values else None,
        top=_value(shown, unit), start=start, end=end, label=label,
    )  # fmt: skip
