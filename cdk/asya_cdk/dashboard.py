"""`MeshDashboard`: one CloudWatch dashboard per namespace, and the alarms that matter.

Widgets: per-actor queue depth and age of the oldest message, throughput, errors by reason, handler
and hop durations, x-sump arrivals and the x-sump dead-letter depth. Alarms: any x-sump arrival, any
message in x-sump's dead-letter queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.config import SUMP
from asya.telemetry import METRIC_NAMESPACE

if TYPE_CHECKING:
    from asya_cdk.actor import ActorFunction

PERIOD = cdk.Duration.minutes(1)


class MeshDashboard(Construct):
    """Exposes `dashboard`, `sump_alarm` and `dead_letter_alarm`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        namespace: str,
        actors: dict[str, ActorFunction],
        sump_dlq: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"asya-{namespace}")

        def asya_metric(name: str, actor: str, statistic: str = "Sum") -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=METRIC_NAMESPACE,
                metric_name=name,
                dimensions_map={"namespace": namespace, "actor": actor},
                statistic=statistic,
                period=PERIOD,
                label=actor,
            )

        def search(metric: str, dimension: str) -> cloudwatch.MathExpression:
            query = f'{{{METRIC_NAMESPACE},namespace,actor,{dimension}}} MetricName="{metric}" namespace="{namespace}"'
            return cloudwatch.MathExpression(
                expression=f"SEARCH('{query}', 'Sum', 60)", using_metrics={}, period=PERIOD
            )

        queues = list(actors.items())

        def per_queue(title: str, metric: Callable[[sqs.IQueue], cloudwatch.Metric]) -> cloudwatch.GraphWidget:
            left = [metric(actor.queue).with_(period=PERIOD, label=name) for name, actor in queues]
            return cloudwatch.GraphWidget(title=title, left=left, width=12)

        self.dashboard.add_widgets(
            per_queue("Queue depth (visible messages)", lambda q: q.metric_approximate_number_of_messages_visible()),
            per_queue("Age of oldest message (s)", lambda q: q.metric_approximate_age_of_oldest_message()),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Throughput (envelopes received)",
                left=[asya_metric("MessagesReceived", name) for name, _ in queues if not name.startswith("x-")],
                width=8,
            ),
            cloudwatch.GraphWidget(title="Errors by reason", left=[search("MessagesFailed", "reason")], width=8),
            cloudwatch.GraphWidget(title="Outcomes", left=[search("MessagesProcessed", "outcome")], width=8),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Handler duration p50 / p99 (ms)",
                left=[asya_metric("HandlerDuration", name, "p50") for name, _ in queues if not name.startswith("x-")],
                right=[asya_metric("HandlerDuration", name, "p99") for name, _ in queues if not name.startswith("x-")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="x-sump arrivals by reason, and its dead letters",
                left=[search("SumpArrivals", "reason")],
                right=[sump_dlq.metric_approximate_number_of_messages_visible(period=PERIOD, label="x-sump DLQ")],
                width=12,
            ),
        )
        self.sump_alarm = cloudwatch.Alarm(
            self,
            "SumpArrivals",
            alarm_name=f"asya-{namespace}-x-sump-arrivals",
            alarm_description="Envelopes reached x-sump: infrastructure errors, failures or redriven messages.",
            metric=asya_metric("SumpArrivals", SUMP),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.dead_letter_alarm = cloudwatch.Alarm(
            self,
            "SumpDeadLetters",
            alarm_name=f"asya-{namespace}-x-sump-dlq-depth",
            alarm_description="x-sump itself could not record messages; they wait in its dead-letter queue.",
            metric=sump_dlq.metric_approximate_number_of_messages_visible(period=PERIOD),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def notify(self, topic_arn: str) -> None:
        topic = sns.Topic.from_topic_arn(self, "AlarmTopic", topic_arn)
        for alarm in (self.sump_alarm, self.dead_letter_alarm):
            alarm.add_alarm_action(actions.SnsAction(topic))
