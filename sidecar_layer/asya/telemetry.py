"""Logs, metrics and traces of the sidecar (docs/spec/README.md): logs and the function's own traces through
Powertools, metrics as CloudWatch embedded metric format lines written here, and with tracing on a
segment per hop (`asya.xray`), sent with the batch's metrics.

Metrics are aggregated over a batch and flushed once at its end: a line per dimension value rather
than a line per message. Powertools' `Metrics` instances share one metric set per execution
environment, so a handler that records its own metrics (through `asya.metrics` or its own
`Metrics()`) has them published with the sidecar's at the end of the batch.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

import orjson
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from asya.log_dedup import exact_dedup

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

    from asya.xray import Segments

METRIC_NAMESPACE = "Asya"
# The dimension naming the mesh. Not "namespace": CloudWatch SEARCH reads `Namespace` as the metric
# namespace designator, and a dashboard query filtering on it would match nothing.
MESH_DIMENSION = "mesh"
ACTOR_DIMENSION = "actor"
# x-backlog's metric (`asya_crew.backlog`): a container actor's messages visible plus in flight, which its
# scaling alarms read (`asya_cdk.container_scaling`)
BACKLOG_METRIC = "Backlog"


EMF_MAX_VALUES = 100  # values per metric in one EMF document
# A duration in milliseconds is kept to the microsecond: the clock's further digits (about 17 in all)
# say nothing a percentile needs, and every digit is a byte of the log line each batch writes
MILLISECOND_DIGITS = 3
_Metric = tuple[str, int, list[float]]  # unit, storage resolution, values
# looked up once: an Enum's member costs 0.1 µs to reach, each time, and its `value` as much again
_MILLISECONDS, _COUNT = MetricUnit.Milliseconds, MetricUnit.Count.value


class Telemetry:
    def __init__(self, namespace: str, actor: str, tracing: bool = False) -> None:
        self.logger = Logger(service=actor)
        exact_dedup(actor)
        self.logger.append_keys(asya_namespace=namespace, actor=actor)
        # service="": no `service` dimension set beside the mesh's own, so each metric is published once
        self.metrics = Metrics(namespace=METRIC_NAMESPACE, service="")
        self._enabled = not is_metrics_disabled()
        self._dimensions = {MESH_DIMENSION: namespace, ACTOR_DIMENSION: actor}
        self._counts: Counter[tuple[str, str, str]] = Counter()
        # each metric's unit and values, by name (a hop's names are plain strings: a `MetricUnit` in the
        # key would be hashed by `Enum.__hash__`, in Python, three times a hop)
        self._observations: dict[str, tuple[MetricUnit, list[float]]] = {}
        self.tracer: Tracer | None = None
        self.segments: Segments | None = None  # a segment per hop: the task's trace (docs/status.md, "Traces")
        if tracing:
            from aws_lambda_powertools import Tracer

            from asya.xray import Segments

            self.tracer = Tracer(service=actor)
            self.segments = Segments.from_env()

    def count(self, name: str, dimension: str = "", value: str = "", amount: int = 1) -> None:
        """Count an event, optionally split by one dimension (outcome, destination kind, reason)."""
        if self._enabled:
            self._counts[(name, dimension, value)] += amount

    def took(self, name: str, started: float) -> None:
        """Observe the milliseconds since `started` (`time.perf_counter`): a hop's durations, twice a
        hop, kept as `observe` keeps them, without its call and its test of the unit."""
        if self._enabled:
            elapsed = round((time.perf_counter() - started) * 1000, MILLISECOND_DIGITS)
            self._observations.setdefault(name, (_MILLISECONDS, []))[1].append(elapsed)

    def observe(self, name: str, unit: MetricUnit, value: float) -> None:
        """Buffer a per-envelope value (a duration, a size) until the batch's flush; a duration in
        milliseconds to the microsecond."""
        if self._enabled:
            kept = round(value, MILLISECOND_DIGITS) if unit is _MILLISECONDS else value
            self._observations.setdefault(name, (unit, []))[1].append(kept)

    def flush(self) -> None:
        """Publish the batch: plain metrics (handlers' own included) in one EMF line, then one line per
        dimension value (outcome, destination, reason).

        The lines are written here rather than by Powertools' `flush_metrics`: that formats every
        metric into a debug message, reads the environment and encodes with the standard library's
        `json` on each call, 84 µs per batch of ten against 9 µs (`bench/sidecar_hop`). Handlers
        still record through Powertools (`asya.metrics`); their metrics, dimensions and metadata are
        taken from its shared set into the plain line. Dimensions are attached here, not as
        Powertools default dimensions, because those are shared by every `Metrics` in the process and
        several actors may share one (the local stack).
        """
        if self.segments is not None:
            self.segments.flush()
        shared = self.metrics
        handler_metrics: dict[str, Any] = {}
        handler_dimensions: dict[str, str] = {}
        metadata: dict[str, Any] = {}
        if shared.metric_set or shared.dimension_set or shared.metadata_set:  # copied only when a handler added
            handler_metrics, handler_dimensions = dict(shared.metric_set), dict(shared.dimension_set)
            metadata = dict(shared.metadata_set)
            # Powertools keeps (and, while disabled, never clears) what handlers add
            shared.clear_metrics()
        if not self._enabled:
            return
        groups: defaultdict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
        for (name, dimension, value), amount in self._counts.items():
            groups[(dimension, value)].append((name, amount))
        self._counts.clear()
        plain: dict[str, _Metric] = {name: (_COUNT, 60, [float(n)]) for name, n in groups.pop(("", ""), [])}
        for name, (unit, values) in self._observations.items():
            plain[name] = (unit.value, 60, values)
        self._observations = {}
        for name, entry in handler_metrics.items():
            own = plain.get(name)
            values = entry["Value"] if own is None else own[2] + entry["Value"]
            plain[name] = (entry["Unit"], entry.get("StorageResolution", 60), values)
        longest = max((len(values) for _, _, values in plain.values()), default=0)
        lines: list[str] = []
        if longest <= EMF_MAX_VALUES:  # the usual batch: one line, each metric's values whole, not sliced
            chunks = [plain] if longest else []
        else:
            chunks = [
                {
                    name: (unit, resolution, values[start : start + EMF_MAX_VALUES])
                    for name, (unit, resolution, values) in plain.items()
                }
                for start in range(0, longest, EMF_MAX_VALUES)
            ]
        for chunk in chunks:
            lines.append(
                self._line({name: metric for name, metric in chunk.items() if metric[2]}, handler_dimensions, metadata)
            )
        for (dimension, value), counts in groups.items():
            lines.append(self._line({name: (_COUNT, 60, [float(n)]) for name, n in counts}, {dimension: value}, {}))
        if lines:  # one write for the batch's lines: the same text as a print of each
            print("\n".join(lines))

    def _line(self, metrics: dict[str, _Metric], dimensions: dict[str, str], metadata: dict[str, Any]) -> str:
        """One CloudWatch embedded-metric-format line (the shape Powertools writes)."""
        dimensions = {**self._dimensions, **dimensions}
        definitions = [
            {"Name": name, "Unit": unit} if resolution != 1 else {"Name": name, "Unit": unit, "StorageResolution": 1}
            for name, (unit, resolution, _) in metrics.items()
        ]
        document: dict[str, Any] = {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {"Namespace": METRIC_NAMESPACE, "Dimensions": [list(dimensions)], "Metrics": definitions}
                ],
            },
            **dimensions,
            **{name: values for name, (_, _, values) in metrics.items()},
            **metadata,
        }
        return orjson.dumps(document).decode()

    def log_failure(self, message: str, **fields: Any) -> None:
        self.logger.warning(message, extra=fields)


def handler_metrics() -> Metrics:
    """What `asya.metrics` gives a handler: a `Metrics` sharing the sidecar's set, flushed with it."""
    return Metrics(namespace=METRIC_NAMESPACE)
