"""A deployed actor's history from CloudWatch: the metrics its functions publish (namespace `Asya`,
dimensions `mesh` and `actor`, as `asya.telemetry` writes them) and SQS's own age of the oldest
message, in one `GetMetricData` per page view, at the window's period (a minute over the hour, five
minutes over the day), kept for `cache_seconds` so reloads and several readers share it.

Durations are CloudWatch's own percentiles of the values published: `ProcessingDuration` (per
envelope, milliseconds) for a Lambda actor, `SparkJobDuration` (per job, seconds) for a Spark actor.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

from asya.telemetry import MESH_DIMENSION, METRIC_NAMESPACE
from asya_local.console.history import History, Point, Window
from asya_local.console.stats import age_query, work_queries

CACHE_SECONDS = 60.0
DURATION = ("ProcessingDuration", 1.0)  # the metric, and its unit in milliseconds: per envelope
JOB_DURATION = ("SparkJobDuration", 1000.0)  # per Spark job, in seconds


class AwsHistory:
    """The `HistorySource` of a deployed mesh, through the caller's CloudWatch client."""

    def __init__(
        self,
        cloudwatch: Any,
        namespace: str,
        *,
        spark_actors: list[str],
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cloudwatch = cloudwatch
        self.namespace = namespace
        self.spark_actors = spark_actors
        self.cache_seconds = cache_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[float, History]] = {}

    def history(self, actor: str, window: Window) -> History:
        now = self.clock()
        with self._lock:
            kept = self._cache.get((actor, window.name))
            if kept is not None and now - kept[0] < self.cache_seconds:
                return kept[1]
        found = History.of(actor, window, now, self._read(actor, window, now))
        with self._lock:
            self._cache[(actor, window.name)] = (now, found)
        return found

    def duration(self, actor: str) -> tuple[str, float]:
        """The metric of the actor's durations, and its unit in milliseconds."""
        return JOB_DURATION if actor in self.spark_actors else DURATION

    def queries(self, actor: str, period: int) -> list[dict[str, Any]]:
        """The actor's queries: `age0`, `processed0`, `failed0`, `p500` and `p950`."""
        name, _ = self.duration(actor)
        metric = {
            "Namespace": METRIC_NAMESPACE,
            "MetricName": name,
            "Dimensions": [{"Name": MESH_DIMENSION, "Value": self.namespace}, {"Name": "actor", "Value": actor}],
        }
        percentiles = [
            {"Id": f"{stat}0", "MetricStat": {"Metric": metric, "Period": period, "Stat": stat}}
            for stat in ("p50", "p95")
        ]
        work = work_queries(self.namespace, actor, 0, period)
        return [age_query(self.namespace, actor, 0, period), *work, *percentiles]

    def _read(self, actor: str, window: Window, now: float) -> dict[int, Point]:
        """Each bucket's values, by its start, from the call's pages."""
        start = window.first(now)
        request: dict[str, Any] = {
            "MetricDataQueries": self.queries(actor, window.period),
            "StartTime": dt.datetime.fromtimestamp(start, dt.UTC),
            "EndTime": dt.datetime.fromtimestamp(start + window.seconds, dt.UTC),
            "ScanBy": "TimestampAscending",
        }
        series: dict[str, dict[int, float]] = {"processed0": {}, "failed0": {}, "p500": {}, "p950": {}, "age0": {}}
        while True:
            page = self.cloudwatch.get_metric_data(**request)
            for result in page.get("MetricDataResults", []):
                values = series.setdefault(result["Id"], {})
                for stamp, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                    values[int(stamp.timestamp()) // window.period * window.period] = float(value)
            if not page.get("NextToken"):
                break
            request["NextToken"] = page["NextToken"]
        _, to_ms = self.duration(actor)
        p50, p95 = ({b: v * to_ms for b, v in series[key].items()} for key in ("p500", "p950"))
        processed, failed, age = series["processed0"], series["failed0"], series["age0"]
        return {
            bucket: Point(
                bucket,
                int(processed.get(bucket, 0)),
                int(failed.get(bucket, 0)),
                p50.get(bucket),
                p95.get(bucket),
                age.get(bucket),
            )
            for bucket in set().union(*(values.keys() for values in series.values()))
        }
