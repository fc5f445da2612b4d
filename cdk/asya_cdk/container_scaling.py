"""A container actor's service scaled on its queue's backlog, from zero.

The tasks wanted are the backlog (messages visible and in flight, their maximum over a minute, as
x-backlog publishes them: `asya_cdk.container_backlog`) over `messages_per_task`: a CloudWatch metric
math. While it is above 0 the `Backlog` alarm sets the service to that many tasks, rounded up, between
`min` and `max` (a step scaling policy of exact capacities); CloudWatch repeats a scaling action each
minute its alarm stays in ALARM, so the count follows the backlog both ways, and comes back after a
deploy resets it. After `scale_in_cooldown` at 0 the `Idle` alarm sets it to `min`.

Not SQS's own metrics: SQS publishes them only while a queue is active, and a queue no consumer has
polled for six hours (an actor at `min: 0`) goes quiet until some time after its next message, so that
message's scale-out waited for them. x-backlog publishes a data point each minute, 0 included, and its
`GetQueueAttributes` keeps the queue active. A minute without one means x-backlog failed, not that
the queue is empty: `Backlog` takes it as no backlog (it scales nothing out) and `Idle` ignores it
(it scales nothing in), so the service holds its task count until the data comes back.
"""

from __future__ import annotations

import math

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya_cdk.container_config import ContainerConfig

MAX_STEPS = 20  # Application Auto Scaling: step adjustments in one policy
SCALING_PERIOD = cdk.Duration.minutes(1)  # x-backlog publishes each minute


def scale_on_backlog(
    scope: Construct, *, name: str, service: ecs.CfnService, backlog: cloudwatch.IMetric, container: ContainerConfig
) -> appscaling.ScalableTarget:
    """The service's scalable target, its two step scaling policies and their alarms on `backlog` (the
    actor's `backlog_metric`), in `scope`."""
    target = appscaling.ScalableTarget(
        scope,
        "Scaling",
        service_namespace=appscaling.ServiceNamespace.ECS,
        resource_id=f"service/{service.cluster}/{service.attr_name}",
        scalable_dimension="ecs:service:DesiredCount",
        min_capacity=container.min,
        max_capacity=container.max,
        role=iam.Role.from_role_arn(scope, "ScalingRole", scaling_role_arn(cdk.Stack.of(scope)), mutable=False),
    )
    target.node.add_dependency(service)
    wanted = cloudwatch.MathExpression(
        expression=f"backlog / {container.messages_per_task}",
        using_metrics={"backlog": backlog},
        label="tasks wanted",
        period=SCALING_PERIOD,
    )
    out = appscaling.StepScalingAction(
        scope,
        "ScaleOut",
        scaling_target=target,
        adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
        cooldown=SCALING_PERIOD,
        metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
    )
    for lower, upper, tasks in task_steps(container.min, container.max):
        out.add_adjustment(adjustment=tasks, lower_bound=lower, upper_bound=upper)
    growing = cloudwatch.Alarm(
        scope,
        "Backlog",
        alarm_description=f"{name}: messages waiting or in flight; tasks follow the backlog",
        metric=wanted,
        threshold=0,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    growing.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(out))
    idle = appscaling.StepScalingAction(
        scope,
        "ScaleIn",
        scaling_target=target,
        adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
        cooldown=cdk.Duration.seconds(container.scale_in_cooldown),
    )
    idle.add_adjustment(adjustment=container.min, upper_bound=0)
    empty = cloudwatch.Alarm(
        scope,
        "Idle",
        alarm_description=f"{name}: no message for the cool-down; the service goes to its minimum",
        metric=wanted,
        threshold=0,
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=max(1, math.ceil(container.scale_in_cooldown / SCALING_PERIOD.to_seconds())),
        treat_missing_data=cloudwatch.TreatMissingData.IGNORE,
    )
    empty.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(idle))
    return target


def task_steps(least: int, most: int) -> list[tuple[float, float | None, int]]:
    """The scale-out policy's steps over the tasks wanted (above the alarm's threshold 0): each as
    (lower, upper, tasks), at most `MAX_STEPS`, the last open-ended at `most`; `wanted` in [lower,
    upper) gets `tasks`, so 0.1 tasks' worth of backlog gets one task."""
    count = min(most, MAX_STEPS)
    tasks = sorted({max(least, 1, math.ceil(most * step / count)) for step in range(1, count + 1)})
    steps: list[tuple[float, float | None, int]] = []
    lower = 0.0
    for index, size in enumerate(tasks):
        upper = None if index == len(tasks) - 1 else float(size)
        steps.append((lower, upper, size))
        lower = float(size)
    return steps


def scaling_role_arn(stack: cdk.Stack) -> str:
    """Application Auto Scaling's service-linked role for ECS services, which it makes on first use: no
    role of the mesh's own, as it needs no more than AWS's role grants."""
    return (
        f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/ecs.application-autoscaling.amazonaws.com/"
        "AWSServiceRoleForApplicationAutoScaling_ECSService"
    )
