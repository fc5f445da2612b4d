"""`MeshDashboard`: one CloudWatch dashboard per namespace, and the alarms that matter.

Widgets: per-actor queue depth and age of the oldest message, throughput, errors by reason, handler
and hop durations, x-sump arrivals and the x-sump dead-letter depth; with Spark actors, batches
started and their sizes, job durations and jobs by outcome; with container actors, their tasks running
and wanted; with a status gateway, tasks
created and finished by outcome, the API's errors and latency, and the stream consumer's dead letters.
Every function's Lambda errors and throttles are drawn too: the sidecar turns a handler's exception
into a routed envelope, so a Lambda-level error means the function itself failed (an import error, a
crash, running out of memory or time) and its batch comes back until it is redriven to x-sump, hours
later with the default visibility timeout. Alarms: any x-sump arrival, any message in x-sump's
dead-letter queue or in the stream consumer's, any function error.
"""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.names import SUMP, mesh_own, mesh_prefix, resource_name
from asya.telemetry import MESH_DIMENSION, METRIC_NAMESPACE

PERIOD = cdk.Duration.minutes(1)
TASK_OUTCOMES = ("succeeded", "failed", "canceled")
ALARM_MAX_METRICS = 10  # CloudWatch: metrics in one alarm's math expression


class MeshDashboard(Construct):
    """Exposes `dashboard`, `sump_alarm`, `dead_letter_alarm`, `stream_alarm` (None without a gateway)
    and `function_error_alarms` (one per ten functions). `queues` and `functions` are by the name the
    dashboard shows; they may be imported by name (an actor in a nested stack), as metrics need
    nothing but names."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        namespace: str,
        queues: dict[str, sqs.IQueue],
        functions: dict[str, lambda_.IFunction],
        sump_dlq: sqs.IQueue,
        api: apigateway.RestApiBase | apigatewayv2.HttpApi | None = None,
        stream_dlq: sqs.IQueue | None = None,
        spark_actors: list[str] | None = None,
        container_services: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=mesh_prefix(namespace))

        def asya_metric(
            name: str, actor: str, statistic: str = "Sum", *, outcome: str | None = None, label: str | None = None
        ) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=METRIC_NAMESPACE,
                metric_name=name,
                dimensions_map={MESH_DIMENSION: namespace, "actor": actor, **({"outcome": outcome} if outcome else {})},
                statistic=statistic,
                period=PERIOD,
                label=label or outcome or actor,
            )

        def search(metric: str, dimension: str) -> cloudwatch.MathExpression:
            query = (
                f"{{{METRIC_NAMESPACE},{MESH_DIMENSION},actor,{dimension}}} "
                f'MetricName="{metric}" {MESH_DIMENSION}="{namespace}"'
            )
            return cloudwatch.MathExpression(
                expression=f"SEARCH('{query}', 'Sum', 60)", using_metrics={}, period=PERIOD
            )

        by_actor = list(queues.items())

        def per_queue(title: str, metric: Callable[[sqs.IQueue], cloudwatch.Metric]) -> cloudwatch.GraphWidget:
            left = [metric(queue).with_(period=PERIOD, label=name) for name, queue in by_actor]
            return cloudwatch.GraphWidget(title=title, left=left, width=12)

        self.dashboard.add_widgets(
            per_queue("Queue depth (visible messages)", lambda q: q.metric_approximate_number_of_messages_visible()),
            per_queue("Age of oldest message (s)", lambda q: q.metric_approximate_age_of_oldest_message()),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Throughput (envelopes received)",
                left=[asya_metric("MessagesReceived", name) for name, _ in by_actor if not mesh_own(name)],
                width=8,
            ),
            cloudwatch.GraphWidget(title="Errors by reason", left=[search("MessagesFailed", "reason")], width=8),
            cloudwatch.GraphWidget(title="Outcomes", left=[search("MessagesProcessed", "outcome")], width=8),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Handler duration p50 / p99 (ms)",
                left=[asya_metric("HandlerDuration", name, "p50") for name, _ in by_actor if not mesh_own(name)],
                right=[asya_metric("HandlerDuration", name, "p99") for name, _ in by_actor if not mesh_own(name)],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="x-sump arrivals by reason, and its dead letters",
                left=[search("SumpArrivals", "reason")],
                right=[sump_dlq.metric_approximate_number_of_messages_visible(period=PERIOD, label="x-sump DLQ")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Function errors (Lambda: crashes, timeouts, out of memory)",
                left=[function.metric_errors(period=PERIOD, label=label) for label, function in functions.items()],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Function throttles",
                left=[function.metric_throttles(period=PERIOD, label=label) for label, function in functions.items()],
                width=12,
            ),
        )
        self.function_error_alarms = [
            self._above_zero(
                f"FunctionErrors{number}",
                resource_name(namespace, f"function-errors-{number}"),
                "A function of the mesh failed as a whole (import error, crash, timeout, out of memory): its "
                "messages return until they are redriven to x-sump. Functions: " + ", ".join(group) + ".",
                cloudwatch.MathExpression(
                    expression=" + ".join(f"FILL(e{n}, 0)" for n in range(len(group))),
                    using_metrics={
                        f"e{n}": functions[label].metric_errors(period=PERIOD) for n, label in enumerate(group)
                    },
                    period=PERIOD,
                    label="function errors",
                ),
            )
            for number, group in _groups(list(functions), ALARM_MAX_METRICS)
        ]
        self.sump_alarm = self._above_zero(
            "SumpArrivals",
            resource_name(namespace, "x-sump-arrivals"),
            "Envelopes reached x-sump: infrastructure errors, failures or redriven messages.",
            asya_metric("SumpArrivals", SUMP),
        )
        self.dead_letter_alarm = self._above_zero(
            "SumpDeadLetters",
            resource_name(namespace, "x-sump-dlq-depth"),
            "x-sump itself could not record messages; they wait in its dead-letter queue.",
            sump_dlq.metric_approximate_number_of_messages_visible(period=PERIOD),
        )

        if spark_actors:
            # published by each Spark actor's dispatcher (batches) and collector (jobs, durations)
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title="Spark batches started (left), envelopes per batch p50 (right)",
                    left=[asya_metric("SparkBatches", name) for name in spark_actors],
                    right=[asya_metric("SparkBatchSize", name, "p50") for name in spark_actors],
                    width=8,
                ),
                cloudwatch.GraphWidget(
                    title="Spark job duration p50 / p99 (s)",
                    left=[asya_metric("SparkJobDuration", name, "p50", label=f"{name} p50") for name in spark_actors],
                    right=[asya_metric("SparkJobDuration", name, "p99", label=f"{name} p99") for name in spark_actors],
                    width=8,
                ),
                cloudwatch.GraphWidget(title="Spark jobs by outcome", left=[search("SparkJobs", "outcome")], width=8),
            )

        if container_services:
            self.dashboard.add_widgets(_container_tasks(container_services))

        self.stream_alarm: cloudwatch.Alarm | None = None
        if api is None or stream_dlq is None:
            return
        # published by the gateway's functions (asya_gateway.api, .stream, .backstop) and x-pause/x-resume
        finished = [asya_metric("TasksFinished", "gateway-stream", outcome=o) for o in TASK_OUTCOMES]
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Tasks created and finished by outcome (left); paused, resumed, expired (right)",
                left=[asya_metric("TasksCreated", "gateway-stream", label="created"), *finished],
                right=[
                    asya_metric("TasksPaused", "x-pause", label="paused"),
                    asya_metric("TasksResumed", "x-resume", label="resumed"),
                    asya_metric("TasksExpired", "gateway-backstop", label="expired by the backstop"),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Gateway API: 4XX / 5XX (left), latency p50 / p99 ms (right)",
                left=[
                    api.metric_client_error(period=PERIOD, label="4XX"),
                    api.metric_server_error(period=PERIOD, label="5XX"),
                ],
                right=[
                    api.metric_latency(period=PERIOD, statistic="p50", label="p50"),
                    api.metric_latency(period=PERIOD, statistic="p99", label="p99"),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Gateway stream consumer dead letters",
                left=[stream_dlq.metric_approximate_number_of_messages_visible(period=PERIOD, label="stream DLQ")],
                width=8,
            ),
        )
        self.stream_alarm = self._above_zero(
            "StreamDeadLetters",
            resource_name(namespace, "gateway-stream-dlq-depth"),
            "The gateway's stream consumer gave up on task changes: live status events are missing; the "
            "messages name the stream positions to replay.",
            stream_dlq.metric_approximate_number_of_messages_visible(period=PERIOD),
        )

    def _above_zero(
        self, construct_id: str, name: str, description: str, metric: cloudwatch.IMetric
    ) -> cloudwatch.Alarm:
        """Each alarm here means something is waiting for an operator, so one message is one too many."""
        return cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=name,
            alarm_description=description,
            metric=metric,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def notify(self, topic_arn: str) -> None:
        topic = sns.Topic.from_topic_arn(self, "AlarmTopic", topic_arn)
        for alarm in (self.sump_alarm, self.dead_letter_alarm, self.stream_alarm, *self.function_error_alarms):
            if alarm is not None:
                alarm.add_alarm_action(actions.SnsAction(topic))


def _container_tasks(services: dict[str, tuple[str, str]]) -> cloudwatch.GraphWidget:
    """Each container actor's tasks running and wanted, by (cluster, service) (Container Insights, on in
    every cluster of the mesh): 0 while its queue is empty, and the wait of a cold start when it is not."""

    def count(metric: str, cluster: str, service: str, label: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace="ECS/ContainerInsights",
            metric_name=metric,
            dimensions_map={"ClusterName": cluster, "ServiceName": service},
            statistic="Maximum",
            period=PERIOD,
            label=label,
        )

    return cloudwatch.GraphWidget(
        title="Container actors: tasks running (left) and wanted (right)",
        left=[count("RunningTaskCount", *where, actor) for actor, where in services.items()],
        right=[count("DesiredTaskCount", *where, f"{actor} wanted") for actor, where in services.items()],
        width=12,
    )


def _groups(items: list[str], size: int) -> list[tuple[int, list[str]]]:
    """`items` in groups of at most `size`, numbered from 1."""
    return [(start // size + 1, items[start : start + size]) for start in range(0, len(items), size)]
