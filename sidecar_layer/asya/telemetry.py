"""Logs, metrics and traces of the sidecar, all through Powertools (SPEC §10).

Metrics are aggregated over a batch and flushed once at its end as CloudWatch embedded metric format:
a line per dimension value rather than a line per message. Powertools' `Metrics` instances share one
metric set per execution environment, so a handler that records its own metrics (through
`asya.metrics` or its own `Metrics()`) has them published with the sidecar's at the end of the batch.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

METRIC_NAMESPACE = "Asya"
# The dimension naming the mesh. Not "namespace": CloudWatch SEARCH reads `Namespace` as the metric
# namespace designator, and a dashboard query filtering on it would match nothing.
MESH_DIMENSION = "mesh"


EMF_MAX_VALUES = 100  # values per metric in one EMF document


class Telemetry:
    def __init__(self, namespace: str, actor: str, tracing: bool = False) -> None:
        self.logger = Logger(service=actor)
        self.logger.append_keys(asya_namespace=namespace, actor=actor)
        # service="": no `service` dimension set beside the mesh's own, so each metric is published once
        self.metrics = Metrics(namespace=METRIC_NAMESPACE, service="")
        self._enabled = not is_metrics_disabled()
        self._dimensions = {MESH_DIMENSION: namespace, "actor": actor}
        self._counts: Counter[tuple[str, str, str]] = Counter()
        self._observations: defaultdict[tuple[str, MetricUnit], list[float]] = defaultdict(list)
        self.tracer: Tracer | None = None
        if tracing:
            from aws_lambda_powertools import Tracer

            self.tracer = Tracer(service=actor)

    def count(self, name: str, dimension: str = "", value: str = "", amount: int = 1) -> None:
        """Count an event, optionally split by one dimension (outcome, destination kind, reason)."""
        if self._enabled:
            self._counts[(name, dimension, value)] += amount

    def observe(self, name: str, unit: MetricUnit, value: float) -> None:
        """Buffer a per-envelope value (a duration, a size) until the batch's flush."""
        if self._enabled:
            self._observations[(name, unit)].append(value)

    def flush(self) -> None:
        """Publish the batch: plain metrics (handlers' own included) in one EMF line, then one line per
        dimension value (outcome, destination, reason).

        Dimensions are attached at flush time, not as Powertools default dimensions, because those are
        shared by every `Metrics` in the process and several actors may share one (the local stack).
        """
        if not self._enabled:
            # Powertools keeps (and never clears) what handlers add while metrics are disabled
            self.metrics.clear_metrics()
            return
        groups: defaultdict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
        for (name, dimension, value), amount in self._counts.items():
            groups[(dimension, value)].append((name, amount))
        self._counts.clear()
        observations, self._observations = self._observations, defaultdict(list)
        longest = max((len(values) for values in observations.values()), default=0)
        for start in range(0, max(longest, 1), EMF_MAX_VALUES):
            for (name, unit), values in observations.items():
                self._add_values(name, unit, values[start : start + EMF_MAX_VALUES])
            self._publish(groups.pop(("", ""), []), {})
        for (dimension, value), counts in groups.items():
            self._publish(counts, {dimension: value})

    def _add_values(self, name: str, unit: MetricUnit, values: list[float]) -> None:
        """Hand Powertools one value through `add_metric` (which validates name and unit) and the rest
        straight into its metric set: `add_metric` formats the whole metric into a debug string on
        every call, which made it the largest cost of a hop."""
        if not values:
            return
        self.metrics.add_metric(name=name, unit=unit, value=values[0])
        entry = self.metrics.metric_set.get(name)
        if entry is None or len(entry["Value"]) + len(values) > EMF_MAX_VALUES:  # shared with a handler's metric
            for value in values[1:]:
                self.metrics.add_metric(name=name, unit=unit, value=value)
        else:
            entry["Value"].extend(values[1:])

    def _publish(self, counts: list[tuple[str, int]], dimensions: dict[str, str]) -> None:
        for name, amount in counts:
            self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=amount)
        if not self.metrics.metric_set:
            return
        # the primary dimension set, not `add_dimensions` (a second set): one set, so one metric per value
        for name, value in {**self._dimensions, **dimensions}.items():
            self.metrics.add_dimension(name=name, value=value)
        self.metrics.flush_metrics()

    def log_failure(self, message: str, **fields: Any) -> None:
        self.logger.warning(message, extra=fields)


def handler_metrics() -> Metrics:
    """What `asya.metrics` gives a handler: a `Metrics` sharing the sidecar's set, flushed with it."""
    return Metrics(namespace=METRIC_NAMESPACE)
