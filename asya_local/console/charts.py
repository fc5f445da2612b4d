"""The actor page's charts, laid out on the server as SVG shapes (`templates/_chart.html` draws them):
no chart library, nothing for the browser to fetch or run.

A chart's plot is one unit wide per bucket and 100 high, stretched to the page's width
(`preserveAspectRatio="none"`, strokes that do not scale), so it reads the same at 390 and 1400
pixels; its labels are HTML around it, never stretched text. Counts are bars; durations and ages are
step lines, a level across each bucket measured, broken where nothing was (a bucket with no envelope
has no duration: a gap, not a zero). Every bucket has a hover area whose `<title>` gives its values
after its start, in UTC, which the page's script puts in the reader's zone (`data-start`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from asya_local.console.history import History, Point

HEIGHT = 100.0


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    height: float


@dataclass(frozen=True, slots=True)
class Line:
    name: str  # the legend's, and the CSS class `line-<name>`
    path: str  # SVG path data; empty when nothing was measured


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    top: str  # the value at the top of the plot, as read
    buckets: int
    bars: list[Bar]
    lines: list[Line]
    hints: list[str]  # each bucket's values, in words, after its start ("10:05 UTC · 3 processed")
    starts: list[int]  # each bucket's start, epoch seconds: the page shows its hints' times in local time
    summary: str  # the chart in one sentence (its caption, and for a screen reader)


def charts(history: History) -> list[Chart]:
    """Throughput, p50/p95 duration, errors, queue age."""
    per = "minute" if history.window.period == 60 else f"{history.window.period // 60} minutes"
    points = history.points
    return [
        _bars(
            history,
            "throughput",
            f"Envelopes processed per {per}",
            [point.processed for point in points],
            lambda n: f"{n:g} processed",
        ),
        _lines(
            history,
            "duration",
            "Duration, p50 and p95",
            {"p50": [point.p50 for point in points], "p95": [point.p95 for point in points]},
            duration_text,
        ),
        _bars(
            history,
            "errors",
            f"Envelopes failed per {per}",
            [point.failed for point in points],
            lambda n: f"{n:g} failed",
        ),
        _lines(history, "age", "Oldest message waiting", {"age": [point.age for point in points]}, age_text),
    ]


def _bars(history: History, key: str, title: str, values: list[int], said: Callable[[float], str]) -> Chart:
    top = nice_ceiling(max(values, default=0))
    bars = [Bar(index + 0.15, HEIGHT * value / top) for index, value in enumerate(values) if value]
    hints = [f"{_when(point)} · {said(value)}" for point, value in zip(history.points, values, strict=True)]
    total, peak = sum(values), max(values, default=0)
    summary = f"{said(total)} over the {history.window.label}, at most {peak:g} in one bucket" if total else "none"
    starts = [point.start for point in history.points]
    return Chart(key, title, said(top), len(values), bars, [], hints, starts, summary)


def _lines(
    history: History, key: str, title: str, series: dict[str, list[float | None]], said: Callable[[float], str]
) -> Chart:
    measured = [value for values in series.values() for value in values if value is not None]
    top = nice_ceiling(max(measured, default=0.0))
    lines = [Line(name, step_path(values, top)) for name, values in series.items()]
    hints = []
    for index, point in enumerate(history.points):
        at = {name: values[index] for name, values in series.items()}
        shown = [f"{name} {said(value)}" for name, value in at.items() if value is not None]
        hints.append(f"{_when(point)} · {', '.join(shown) if shown else 'not measured'}")
    if not measured:
        summary = "not measured"
    else:
        summary = "; ".join(
            f"{name} at most {said(max(v for v in values if v is not None))}"
            for name, values in series.items()
            if any(v is not None for v in values)
        )
    starts = [point.start for point in history.points]
    return Chart(key, title, said(top), len(history.points), [], lines, hints, starts, summary)


def step_path(values: Sequence[float | None], top: float) -> str:
    """A level across each measured bucket, joined to the next measured one; a gap where none."""
    parts: list[str] = []
    joined = False
    for index, value in enumerate(values):
        if value is None:
            joined = False
            continue
        y = round(HEIGHT - HEIGHT * value / top, 2)
        parts.append(f"V{y} H{index + 1}" if joined else f"M{index} {y} H{index + 1}")
        joined = True
    return " ".join(parts)


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten at or above `value` (1 for nothing): the top of a plot."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1.0, 2.0, 5.0, 10.0) if step * power >= value)


def duration_text(milliseconds: float) -> str:
    if milliseconds < 1000:
        return f"{milliseconds:.3g} ms"
    if milliseconds < 120_000:
        return f"{milliseconds / 1000:.3g} s"
    return f"{milliseconds / 60_000:.3g} min"


def age_text(seconds: float) -> str:
    return duration_text(seconds * 1000) if seconds else "0 s"


def _when(point: Point) -> str:
    return dt.datetime.fromtimestamp(point.start, dt.UTC).strftime("%H:%M UTC")
