"""What each actor did over the last minutes, from the embedded-metric-format lines its functions
print (`asya.telemetry`): the same metrics CloudWatch holds on AWS (namespace `Asya`, dimensions
`mesh` and `actor`), counted here from the local stack's worker log.

Counted per actor and minute: envelopes processed (`MessagesProcessed`, every outcome; x-sink's
`ResultsStored`) and failed (`MessagesFailed`: handler failures that ended their envelope,
infrastructure errors sent to x-sump); x-sump's arrivals (`SumpArrivals`) count as both; and how long
each took (`ProcessingDuration`, a value per envelope; a Spark actor's `SparkJobDuration`, a value per
job). The figures over `WINDOW_SECONDS` are the mesh page's; the last hour and day, kept in
`asya_local.console.work_history`, the actor pages' charts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from asya.telemetry import MESH_DIMENSION, METRIC_NAMESPACE
from asya_local.console.history import HOUR
from asya_local.console.work_history import WorkHistory

WINDOW_SECONDS = 300
PROCESSED = ("MessagesProcessed", "ResultsStored")  # an actor's envelopes by outcome; x-sink's results kept
FAILED = "MessagesFailed"  # by reason: failures that ended an envelope, infrastructure errors
SUMPED = "SumpArrivals"  # x-sump: what it kept
DURATION = "ProcessingDuration"  # milliseconds, per envelope
JOB_DURATION = "SparkJobDuration"  # seconds, per Spark job


@dataclass(frozen=True, slots=True)
class Activity:
    """One actor over the window: envelopes processed and failed (x-sump: arrivals kept)."""

    processed: int = 0
    failed: int = 0

    def per_minute(self, window: float = WINDOW_SECONDS) -> float:
        return self.processed * 60 / window


class ActivityCounter:
    """Counts metric lines as they come (`take`), per actor and minute, into `history`; thread-safe.
    `window` is at most an hour (the minutes `history` keeps)."""

    def __init__(self, namespace: str, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self.namespace = namespace
        self.window = min(window, HOUR.seconds)
        self.clock = clock
        self.history = WorkHistory(clock)

    def take(self, line: str) -> bool:
        """Count the line if it is one of this mesh's metric documents; False if it is not one."""
        if not line.startswith('{"_aws"'):
            return False
        try:
            document = orjson.loads(line)
            metrics = document["_aws"]["CloudWatchMetrics"][0]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            return False
        if metrics.get("Namespace") != METRIC_NAMESPACE or document.get(MESH_DIMENSION) != self.namespace:
            return True  # a metric line, not this mesh's
        actor = document.get("actor")
        if not isinstance(actor, str):
            return True
        processed = sum(_total(document.get(name)) for name in PROCESSED)
        failed = _total(document.get(FAILED))
        if "reason" not in document:  # x-sump's total (its lines by reason split the same arrivals)
            arrivals = _total(document.get(SUMPED))
            processed, failed = processed + arrivals, failed + arrivals
        durations = _values(document.get(DURATION))
        jobs = [seconds * 1000 for seconds in _values(document.get(JOB_DURATION))]
        if processed or failed or durations or jobs:
            at = document["_aws"].get("Timestamp", self.clock() * 1000) / 1000
            self.history.record(actor, at, processed=processed, failed=failed, durations=durations, jobs=jobs)
        return True

    def activity(self) -> dict[str, Activity]:
        """Each actor's counts over the last `window` seconds (whole minutes, the current one included)."""
        totals = self.history.totals(self.clock() - self.window)
        return {actor: Activity(processed, failed) for actor, (processed, failed) in totals.items()}


def _values(values: object) -> list[float]:
    """A metric's values as an EMF document holds them: a number, or a list of them."""
    if isinstance(values, list):
        return [float(value) for value in values if isinstance(value, int | float)]
    return [float(values)] if isinstance(values, int | float) else []


def _total(values: object) -> int:
    return int(sum(_values(values)))
