"""Logs, metrics and traces of the sidecar, all through Powertools (SPEC §10).

Metrics are aggregated over a batch and flushed once at its end as CloudWatch embedded metric format:
a line per dimension value rather than a line per message. Powertools' `Metrics` instances share one
metric set per execution environment, so a handler that records its own metrics (through
`asya.metrics` or its own `Metrics()`) has them published with the sidecar's at the end of the batch.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

METRIC_NAMESPACE = "Asya"


class Telemetry:
    def __init__(self, namespace: str, actor: str, tracing: bool = False) -> None:
        self.logger = Logger(service=actor)
        self.logger.append_keys(asya_namespace=namespace, actor=actor)
        self.metrics = Metrics(namespace=METRIC_NAMESPACE)
        self._dimensions = {"namespace": namespace, "actor": actor}
        self.metrics.set_default_dimensions(**self._dimensions)
        self._counts: Counter[tuple[str, str, str]] = Counter()
        self.tracer: Tracer | None = None
        if tracing:
            from aws_lambda_powertools import Tracer

            self.tracer = Tracer(service=actor)

    def count(self, name: str, dimension: str = "", value: str = "", amount: int = 1) -> None:
        """Count an event, optionally split by one dimension (outcome, destination kind, reason)."""
        self._counts[(name, dimension, value)] += amount

    def observe(self, name: str, unit: MetricUnit, value: float) -> None:
        self.metrics.add_metric(name=name, unit=unit, value=value)

    def flush(self) -> None:
        for (name, dimension, value), amount in self._counts.items():
            if not dimension:
                self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=amount)
                continue
            with single_metric(
                name=name,
                unit=MetricUnit.Count,
                value=amount,
                namespace=METRIC_NAMESPACE,
                default_dimensions=self._dimensions,
            ) as metric:
                metric.add_dimension(name=dimension, value=value)
        self._counts.clear()
        self.metrics.flush_metrics()

    def log_failure(self, message: str, **fields: Any) -> None:
        self.logger.warning(message, extra=fields)


def handler_metrics() -> Metrics:
    """What `asya.metrics` gives a handler: a `Metrics` sharing the sidecar's set, flushed with it."""
    return Metrics(namespace=METRIC_NAMESPACE)
