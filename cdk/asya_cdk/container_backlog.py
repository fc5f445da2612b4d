"""x-backlog: the schedule that publishes a mesh's container actors' backlog (`asya_crew.backlog`).

A mesh with container actors gets one function and one EventBridge rule, every minute, whose constant
input names the mesh and its container actors; a mesh without them gets neither. The function may
read exactly those queues (their URL and attributes, by ARN built from their names, so an actor in a
nested stack needs nothing from it) and put metric data only in the mesh's metric namespace.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya.names import BACKLOG, resource_name
from asya.telemetry import ACTOR_DIMENSION, BACKLOG_METRIC, MESH_DIMENSION, METRIC_NAMESPACE
from asya_cdk.function import MeshFunction, mesh_code
from asya_cdk.layer import SidecarLayer
from asya_cdk.nag import acknowledge
from asya_cdk.queue_grants import queue_arn

PERIOD = cdk.Duration.minutes(1)  # EventBridge's shortest rate, and the scaling alarms' period
QUEUE_READS = ["sqs:GetQueueUrl", "sqs:GetQueueAttributes"]


def backlog_metric(namespace: str, actor: str) -> cloudwatch.Metric:
    """What x-backlog publishes for one actor: its highest count in each minute."""
    return cloudwatch.Metric(
        namespace=METRIC_NAMESPACE,
        metric_name=BACKLOG_METRIC,
        dimensions_map={MESH_DIMENSION: namespace, ACTOR_DIMENSION: actor},
        period=PERIOD,
        statistic="Maximum",
    )


class BacklogSchedule(Construct):
    """Exposes `publisher` (its `MeshFunction`) and `rule`."""

    def __init__(
        self, scope: Construct, construct_id: str, *, namespace: str, actors: list[str], layer: SidecarLayer
    ) -> None:
        super().__init__(scope, construct_id)
        self.publisher = MeshFunction(
            self,
            "Publisher",
            name=resource_name(namespace, BACKLOG),
            code=mesh_code(),
            handler="asya_crew.backlog.lambda_handler",
            environment={},
            layer=layer,
            timeout=cdk.Duration.seconds(30),
            memory=256,
            tracing=False,
        )
        self.publisher.allow(QUEUE_READS, *(queue_arn(self, namespace, actor) for actor in actors))
        self.publisher.role.add_to_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],  # PutMetricData takes no resource: the namespace is its only scope
                conditions={"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}},
            )
        )
        # each run publishes the minute it runs in; a late retry would only fill a minute already past
        self.publisher.function.configure_async_invoke(retry_attempts=0)
        self.rule = events.Rule(
            self,
            "Schedule",
            rule_name=resource_name(namespace, BACKLOG),
            description=f"asya {namespace}: publish the container actors' backlog for their scaling",
            schedule=events.Schedule.rate(PERIOD),
            targets=[
                targets.LambdaFunction(
                    self.publisher.function,
                    event=events.RuleTargetInput.from_object({"mesh": namespace, "actors": sorted(actors)}),
                    max_event_age=PERIOD,
                    retry_attempts=0,
                )
            ],
        )
        acknowledge(
            self.publisher.role,
            "IAM5[Resource::*]",
            "cloudwatch:PutMetricData takes no resource; the grant is limited to the mesh's metric namespace "
            "by the cloudwatch:namespace condition.",
        )
