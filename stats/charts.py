"""Charts for the /stats/ pages, drawn on the server: this module computes the geometry, the template
templates/stats/_chart.html draws it as inline SVG. No JavaScript and nothing fetched from elsewhere, so a
chart shows as the page loads; every chart has its numbers in a table beside it for readers and screen
readers.

One x slot per day. A day without a value (no call, so no rate or latency) is a gap in a line, not a zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

WIDTH, HEIGHT = 960, 220
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 12, 26  # margins: room for the y labels and the x labels
MAX_X_LABELS = 8
Y_TICKS = 4


@dataclass(frozen=True)
class Tick:
    at: float  # x or y in the SVG's coordinates
    label: str


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass
class Line:
    name: str
    css_class: str  # the template colours by class; the legend names it in text too
    segments: list[str] = field(default_factory=list)  # SVG polyline points, one per run of known values
    points: list[Point] = field(default_factory=list)


@dataclass
class Chart:
    title: str
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)


def nice_step(value: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is >= value: round numbers on the y axis."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power * (1 + 1e-9):
            return step * power
    return 10 * power


def y_scale(largest: float, *, whole: bool) -> float:
    """The top of the y axis: Y_TICKS round steps covering `largest` (steps of at least 1 for counts)."""
    step = nice_step(largest / Y_TICKS)
    return Y_TICKS * (max(step, 1.0) if whole else step)


def _frame(title: str, days: list[date], y_max: float, y_label) -> Chart:
    chart = Chart(title=title)
    slot = (chart.right - chart.left) / max(len(days), 1)
    every = math.ceil(len(days) / MAX_X_LABELS) or 1
    chart.x_ticks = [
        Tick(at=round(chart.left + (i + 0.5) * slot, 1), label=f"{day.day} {day:%b}")
        for i, day in enumerate(days)
        if i % every == 0
    ]
    chart.y_ticks = [
        Tick(at=round(_y(chart, y_max * i / Y_TICKS, y_max), 1), label=y_label(y_max * i / Y_TICKS))
        for i in range(Y_TICKS + 1)
    ]
    return chart


def _y(chart: Chart, value: float, y_max: float) -> float:
    return chart.bottom - (chart.bottom - chart.top) * value / y_max


def _x(chart: Chart, index: int, count: int) -> float:
    return chart.left + (index + 0.5) * (chart.right - chart.left) / count


def bar_chart(*, title: str, days: list[date], values: list[int], unit: str) -> Chart:
    y_max = y_scale(max(values, default=0), whole=True)
    chart = _frame(title, days, y_max, lambda v: f"{v:g}")
    slot = (chart.right - chart.left) / max(len(days), 1)
    for i, (day, value) in enumerate(zip(days, values)):
        y = _y(chart, value, y_max)
        chart.bars.append(
            Bar(
                x=round(chart.left + i * slot + slot * 0.15, 1),
                y=round(y, 1),
                width=round(slot * 0.7, 1),
                height=round(chart.bottom - y, 1),
                title=f"{day:%Y-%m-%d}: {value} {unit}",
            )
        )
    return chart


def line_chart(
    *,
    title: str,
    days: list[date],
    series: list[tuple[str, str, list[float | None]]],
    percent: bool = False,
    unit: str = "",
) -> Chart:
    """series: (name, css class, one value or None per day)."""
    if percent:
        y_max, label = 1.0, (lambda v: f"{v * 100:.0f} %")
    else:
        known = [v for _, _, values in series for v in values if v is not None]
        y_max, label = y_scale(max(known, default=0), whole=False), (lambda v: f"{v:g}")
    chart = _frame(title, days, y_max, label)

    def shown(value: float) -> str:
        return f"{value * 100:.1f} %" if percent else f"{value:.1f} {unit}"

    for name, css_class, values in series:
        line = Line(name=name, css_class=css_class)
        run: list[str] = []
        for i, (day, value) in enumerate(zip(days, values)):
            if value is None:
                if run:
                    line.segments.append(" ".join(run))
                run = []
                continue
            point = Point(
                x=round(_x(chart, i, len(days)), 1),
                y=round(_y(chart, value, y_max), 1),
                title=f"{day:%Y-%m-%d}: {name} {shown(value)}",
            )
            line.points.append(point)
            run.append(f"{point.x},{point.y}")
        if run:
            line.segments.append(" ".join(run))
        chart.lines.append(line)
    return chart
