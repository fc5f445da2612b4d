"""What each actor did over the last minutes, from the embedded-metric-format lines its functions
print (`asya.telemetry`): the same metrics CloudWatch holds on AWS (namespace `Asya`, dimensions
`mesh` and `actor`), counted here from the local stack's worker log.

Counted per actor and minute, over `WINDOW_SECONDS`: envelopes processed (`MessagesProcessed`, every
outcome; x-sink's `ResultsStored`) and failed (`MessagesFailed`: handler failures that ended their
envelope, infrastructure errors sent to x-sump); x-sump's arrivals (`SumpArrivals`) count as both.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from asya.telemetry import MESH_DIMENSION, METRIC_NAMESPACE

WINDOW_SECONDS = 300
PROCESSED = ("MessagesProcessed", "ResultsStored")  # an actor's envelopes by outcome; x-sink's results kept
FAILED = "MessagesFailed"  # by reason: failures that ended an envelope, infrastructure errors
SUMPED = "SumpArrivals"  # x-sump: what it kept


@dataclass(frozen=True, slots=True)
class Activity:
    """One actor over the window: envelopes processed and failed (x-sump: arrivals kept)."""

    processed: int = 0
    failed: int = 0

    def per_minute(self, window: float = WINDOW_SECONDS) -> float:
        return self.processed * 60 / window


class ActivityCounter:
    """Counts metric lines as they come (`take`), per actor and minute; thread-safe."""

    def __init__(self, namespace: str, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self.namespace = namespace
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        self._counts: defaultdict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])

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
        if processed or failed:
            minute = int(document["_aws"].get("Timestamp", self.clock() * 1000) // 60_000)
            with self._lock:
                counts = self._counts[(actor, minute)]
                counts[0] += processed
                counts[1] += failed
        return True

    def activity(self) -> dict[str, Activity]:
        """Each actor's counts over the last `window` seconds (whole minutes, the current one included)."""
        oldest = int((self.clock() - self.window) // 60)
        totals: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        with self._lock:
            for actor, minute in [key for key in self._counts if key[1] < oldest]:
                del self._counts[(actor, minute)]
            for (actor, _), (processed, failed) in self._counts.items():
                totals[actor][0] += processed
                totals[actor][1] += failed
        return {actor: Activity(processed, failed) for actor, (processed, failed) in totals.items()}


def _total(values: object) -> int:
    if isinstance(values, list):
        return int(sum(value for value in values if isinstance(value, int | float)))
    return int(values) if isinstance(values, int | float) else 0
