"""An actor's work over time, as the console's actor page charts it: per period, envelopes processed
and failed, the processing duration's p50 and p95, and the oldest waiting message's age.

Two windows, the periods CloudWatch keeps a metric at over each: the last hour by the minute, the last
day by five minutes. A `HistorySource` gives one actor's window; `WorkHistory`
(`asya_local.console.work_history`) counts it from the local stack's worker log, `AwsHistory`
(`asya_local.console.aws_history`) asks CloudWatch for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Window:
    """How far back a chart looks (`seconds`), in buckets of `period` seconds."""

    name: str  # as the page's `span` query parameter says it
    seconds: int
    period: int
    label: str

    @property
    def buckets(self) -> int:
        return self.seconds // self.period

    def starts(self, now: float) -> list[int]:
        """Every bucket's start (epoch seconds), oldest first, the one holding `now` last."""
        first = self.first(now)
        return [first + self.period * index for index in range(self.buckets)]

    def first(self, now: float) -> int:
        """The start of the window's oldest bucket, as of `now`."""
        return int(now) // self.period * self.period - self.period * (self.buckets - 1)


HOUR = Window("hour", 3600, 60, "last hour")
DAY = Window("day", 86_400, 300, "last day")
WINDOWS = {window.name: window for window in (HOUR, DAY)}


@dataclass(frozen=True, slots=True)
class Point:
    """One bucket of an actor's work; `None`: nothing was measured (no envelope, no sample of the
    queue), which a chart leaves blank rather than drawing as zero."""

    start: int  # epoch seconds
    processed: int = 0
    failed: int = 0
    p50: float | None = None  # milliseconds
    p95: float | None = None
    age: float | None = None  # seconds, the most over the bucket


@dataclass(frozen=True)
class History:
    """One actor's window, a point for every bucket (empty ones too), oldest first."""

    actor: str
    window: Window
    points: list[Point]

    @classmethod
    def of(cls, actor: str, window: Window, now: float, found: dict[int, Point]) -> History:
        """The window's buckets up to `now`, each the point found for its start or an empty one."""
        return cls(actor, window, [found.get(start) or Point(start) for start in window.starts(now)])

    @property
    def processed(self) -> int:
        return sum(point.processed for point in self.points)

    @property
    def failed(self) -> int:
        return sum(point.failed for point in self.points)


class HistorySource(Protocol):
    def history(self, actor: str, window: Window) -> History:
        """The actor's work over the window, up to now."""
        ...
