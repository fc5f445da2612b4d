"""The local stack's history of each actor's work, counted as the worker log's metric lines come
(`asya_local.console.activity`) and from the queues' ages each time the console reads its figures.

Kept in bounded memory, whatever runs: per actor, a bucket a minute for the last hour and a bucket
per five minutes for the last day (the `HOUR` and `DAY` windows), so at most 60 + 288 buckets per
actor. A bucket's durations are a DDSketch (a mergeable quantile sketch, within 1 % of the true value
by construction) rather than the values themselves: an actor busy all day would otherwise keep every
envelope's duration. Older buckets are dropped as new ones come.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ddsketch import DDSketch

from asya_local.console.history import DAY, HOUR, History, Point, Window

RELATIVE_ACCURACY = 0.01
KEPT = (HOUR, DAY)


@dataclass(slots=True)
class Bucket:
    processed: int = 0
    failed: int = 0
    durations: DDSketch | None = None  # milliseconds, per envelope
    jobs: DDSketch | None = None  # milliseconds, per Spark job
    age: float | None = None  # seconds, the most sampled

    def point(self, start: int) -> Point:
        """A Spark actor's duration is its jobs': the hops its collector runs when a job fails (to
        meet the resiliency policy) publish their own, which are not the work's."""
        sketch = self.jobs if self.jobs is not None else self.durations
        if sketch is None or sketch.count == 0:
            return Point(start, self.processed, self.failed, age=self.age)
        p50, p95 = sketch.get_quantile_value(0.5), sketch.get_quantile_value(0.95)
        return Point(start, self.processed, self.failed, p50, p95, self.age)


@dataclass
class Series:
    """One window's buckets, by (actor, bucket start)."""

    window: Window
    buckets: dict[tuple[str, int], Bucket] = field(default_factory=dict)

    def bucket(self, actor: str, at: float, now: float) -> Bucket:
        """The bucket holding `at`; a new one drops those that have left the window by `now`."""
        key = (actor, int(at) // self.window.period * self.window.period)
        found = self.buckets.get(key)
        if found is None:
            self.drop_before(now)
            found = self.buckets[key] = Bucket()
        return found

    def drop_before(self, now: float) -> None:
        oldest = self.window.first(now)
        for key in [key for key in self.buckets if key[1] < oldest]:
            del self.buckets[key]


class WorkHistory:
    """The `HistorySource` of a local stack; thread-safe (the log is read in one thread, pages in
    others)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._series = {window.name: Series(window) for window in KEPT}

    def record(
        self,
        actor: str,
        at: float,
        *,
        processed: int = 0,
        failed: int = 0,
        durations: Iterable[float] = (),
        jobs: Iterable[float] = (),
    ) -> None:
        """What one metric line says of `actor` at `at` (epoch seconds); durations (each envelope's)
        and jobs (each Spark job's) in milliseconds."""
        durations, jobs = list(durations), list(jobs)
        now = self.clock()
        with self._lock:
            for series in self._series.values():
                if at < series.window.first(now):
                    continue  # older than this window keeps (a long log read from its start)
                bucket = series.bucket(actor, at, now)
                bucket.processed += processed
                bucket.failed += failed
                bucket.durations = _added(bucket.durations, durations)
                bucket.jobs = _added(bucket.jobs, jobs)

    def sample_ages(self, ages: dict[str, float]) -> None:
        """The oldest message's age in each actor's queue now; a bucket keeps the most sampled."""
        now = self.clock()
        with self._lock:
            for series in self._series.values():
                for actor, age in ages.items():
                    bucket = series.bucket(actor, now, now)
                    bucket.age = age if bucket.age is None else max(bucket.age, age)

    def totals(self, since: float) -> dict[str, tuple[int, int]]:
        """Each actor's envelopes (processed, failed) in the minutes from the one holding `since`."""
        oldest = int(since) // HOUR.period * HOUR.period
        totals: dict[str, tuple[int, int]] = {}
        with self._lock:
            for (actor, start), bucket in self._series[HOUR.name].buckets.items():
                if start >= oldest:
                    processed, failed = totals.get(actor, (0, 0))
                    totals[actor] = (processed + bucket.processed, failed + bucket.failed)
        return totals

    def kept(self) -> int:
        """How many buckets are held, every actor's: what bounds the memory."""
        with self._lock:
            return sum(len(series.buckets) for series in self._series.values())

    def history(self, actor: str, window: Window) -> History:
        now = self.clock()
        with self._lock:
            series = self._series[window.name]
            series.drop_before(now)
            found = {start: bucket.point(start) for (name, start), bucket in series.buckets.items() if name == actor}
        return History.of(actor, window, now, found)


def _added(sketch: DDSketch | None, values: list[float]) -> DDSketch | None:
    """The sketch with the values added; made on the first."""
    if not values:
        return sketch
    sketch = sketch or DDSketch(RELATIVE_ACCURACY)
    for value in values:
        sketch.add(value)
    return sketch
