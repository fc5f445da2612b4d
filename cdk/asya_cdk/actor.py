"""`ActorFunction`: a queue, a Lambda function and the event source mapping between them.

Safe defaults: the queue is encrypted and TLS-only, its visibility timeout is six times the function
timeout, repeated delivery failures are redriven to a dead-letter target (never dropped), the event
source reports partial batch failures, and the function's role can only consume its own queue, send
to its namespace's queues and write its own log group.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from asya.names import resource_name
from asya_cdk.layer import RUNTIME, SidecarLayer

if TYPE_CHECKING:
    from asya_cdk.config import QueueFunctionConfig

# What a function's code folder does not ship: one list for actors' folders and the mesh's own (`lambdas/`),
# so a folder shared by both is one asset. A folder beside a mesh file may hold a checkout's tooling.
ACTOR_CODE_EXCLUDE = (
    "**/__pycache__",
    "**/*.pyc",
    "*.md",
    "tests",
    ".venv",
    ".git",
    "node_modules",
    "cdk.out",
)


def dead_letter_queue(scope: Construct, construct_id: str, queue_name: str) -> sqs.Queue:
    """A queue of last resort: kept for SQS's longest retention, so an operator has two weeks to redrive."""
    return sqs.Queue(
        scope,
        construct_id,
        queue_name=queue_name,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=cdk.Duration.days(14),
    )


class ActorFunction(Construct):
    """A function fed by its own queue, an actor's or the crew's. Exposes `queue`, `function`, `role`
    and `log_group`.

    Everything about the queue, the function and the event source comes from `settings`: the
    function's timeout fits a batch (`lambda_timeout`), the queue's visibility timeout is six times
    that, the event source's concurrency follows the reserved concurrency. `handler` is the Lambda
    entry point (the sidecar's unless said otherwise); `retention` replaces the queue's own."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        namespace: str,
        name: str,
        settings: QueueFunctionConfig,
        code_dir: Path,
        layer: SidecarLayer,
        environment: dict[str, str],
        dead_letter_queue: sqs.IQueue | None,
        handler: str = "asya.lambda_handler",
        retention: cdk.Duration | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        function_name = resource_name(namespace, name)
        dead_letter = (
            sqs.DeadLetterQueue(queue=dead_letter_queue, max_receive_count=settings.max_receive_count)
            if dead_letter_queue is not None
            else None
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=function_name,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(settings.visibility_timeout),
            retention_period=retention or cdk.Duration.seconds(settings.retention),
            dead_letter_queue=dead_letter,
        )
        self.log_group = log_group(self, "Logs", f"/aws/lambda/{function_name}", settings.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"asya actor {namespace}/{name}",
        )
        self.log_group.grant_write(self.role)
        self.role.add_to_policy(send_to_namespace(self, namespace))
        self.function = mesh_lambda(
            self,
            name=function_name,
            role=self.role,
            log_group=self.log_group,
            handler=handler,
            code=code_folder(code_dir),
            environment=environment,
            layer=layer,
            memory=settings.memory,
            timeout=cdk.Duration.seconds(settings.lambda_timeout),
            tracing=settings.tracing,
            reserved_concurrency=settings.reserved_concurrency,
        )
        self.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=settings.batch_size,
                max_batching_window=(
                    cdk.Duration.seconds(settings.batching_window) if settings.batching_window else None
                ),
                max_concurrency=settings.event_source_concurrency,
                report_batch_item_failures=True,
            )
        )


def mesh_lambda(
    scope: Construct,
    *,
    name: str,
    role: iam.IRole,
    log_group: logs.ILogGroup,
    handler: str,
    code: lambda_.Code,
    environment: dict[str, str],
    layer: SidecarLayer,
    memory: int,
    timeout: cdk.Duration,
    tracing: bool,
    reserved_concurrency: int | None = None,
) -> lambda_.Function:
    """Every Lambda function of the mesh, an actor's or the mesh's own: on the sidecar layer, with
    JSON logs into its own log group, its own role, and X-Ray only when asked for."""
    function = lambda_.Function(
        scope,
        "Function",
        function_name=name,
        runtime=RUNTIME,
        architecture=layer.architecture,
        handler=handler,
        code=code,
        layers=[layer.layer],
        environment=environment,
        memory_size=memory,
        timeout=timeout,
        reserved_concurrent_executions=reserved_concurrency,
        role=role,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        tracing=lambda_.Tracing.ACTIVE if tracing else lambda_.Tracing.DISABLED,
    )
    if tracing:
        explain_tracing(role)
    return function


def code_folder(folder: Path) -> lambda_.Code:
    """A function's code as it is in a folder: an actor's, or the crew's and the Spark functions'."""
    return lambda_.Code.from_asset(str(folder), exclude=list(ACTOR_CODE_EXCLUDE))


def log_group(scope: Construct, construct_id: str, name: str, retention_days: int) -> logs.LogGroup:
    """A log group of the mesh's own, so retention is set and the group goes with the stack."""
    return logs.LogGroup(
        scope,
        construct_id,
        log_group_name=name,
        retention=LOG_RETENTION[retention_days],
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )


def send_to_namespace(scope: Construct, namespace: str) -> iam.PolicyStatement:
    """Actors route by envelope, so they may send to any queue of their namespace, and only those."""
    stack = cdk.Stack.of(scope)
    return iam.PolicyStatement(
        actions=["sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"],
        resources=[f"arn:{stack.partition}:sqs:{stack.region}:{stack.account}:asya-{namespace}-*"],
    )


def explain_tracing(role: iam.IRole) -> None:
    """Active tracing grants X-Ray's write actions on `*`; cdk-nag flags that, with reason acknowledged."""
    cdk.Validations.of(role).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="Tracing is on: xray:PutTraceSegments and xray:PutTelemetryRecords take no resource, so "
            "Lambda's X-Ray grant is on '*' and allows nothing else.",
        )
    )


def nag_arn(scope: IConstruct, resource: IConstruct) -> str:
    """How cdk-nag writes `resource`'s ARN in a finding about a resource in `scope`'s stack, for
    acknowledging it: `<LogicalId.Arn>` in the same stack; in a nested stack, the parameter CDK
    passes the ARN in as (`referenceto<unique id>Arn`)."""
    here = cdk.Stack.of(scope)
    element = resource.node.default_child or resource
    if cdk.Stack.of(element) is here:
        return f"<{here.get_logical_id(element)}.Arn>"  # type: ignore[arg-type]
    return f"<referenceto{cdk.Names.node_unique_id(element.node)}Arn>"


LOG_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
}
