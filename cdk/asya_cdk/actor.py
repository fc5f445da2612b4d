"""`ActorFunction`: a queue, a Lambda function and the event source mapping between them.

Safe defaults: the queue is encrypted and TLS-only, its visibility timeout is six times the function
timeout, repeated delivery failures are redriven to a dead-letter target (never dropped), the event
source reports partial batch failures, and the function's role can only consume its own queue, send
to its namespace's queues and write its own log group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from asya.names import resource_name
from asya_cdk.layer import RUNTIME

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


@dataclass(frozen=True)
class ActorProps:
    namespace: str
    name: str
    code_dir: str
    handler: str
    environment: dict[str, str]
    layer: lambda_.ILayerVersion
    architecture: lambda_.Architecture
    dead_letter_queue: sqs.IQueue | None
    timeout: float = 60.0
    visibility_timeout: float = 360.0
    memory: int = 512
    batch_size: int = 10
    batching_window: float = 0.0
    max_concurrency: int | None = None
    reserved_concurrency: int | None = None
    max_receive_count: int = 5
    retention: float = 4 * 86_400
    tracing: bool = False
    log_retention_days: int = 30
    code_exclude: list[str] = field(default_factory=lambda: list(ACTOR_CODE_EXCLUDE))


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
    """Exposes `queue`, `function`, `role` and `log_group`."""

    def __init__(self, scope: Construct, construct_id: str, props: ActorProps) -> None:
        super().__init__(scope, construct_id)
        name = resource_name(props.namespace, props.name)
        dead_letter = (
            sqs.DeadLetterQueue(queue=props.dead_letter_queue, max_receive_count=props.max_receive_count)
            if props.dead_letter_queue is not None
            else None
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=name,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(props.visibility_timeout),
            retention_period=cdk.Duration.seconds(props.retention),
            dead_letter_queue=dead_letter,
        )
        self.log_group = log_group(self, "Logs", f"/aws/lambda/{name}", props.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"asya actor {props.namespace}/{props.name}",
        )
        self.log_group.grant_write(self.role)
        self.role.add_to_policy(send_to_namespace(self, props.namespace))
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=name,
            runtime=RUNTIME,
            architecture=props.architecture,
            handler=props.handler,
            code=lambda_.Code.from_asset(props.code_dir, exclude=props.code_exclude),
            layers=[props.layer],
            environment=props.environment,
            memory_size=props.memory,
            timeout=cdk.Duration.seconds(props.timeout),
            reserved_concurrent_executions=props.reserved_concurrency,
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            tracing=lambda_.Tracing.ACTIVE if props.tracing else lambda_.Tracing.DISABLED,
        )
        if props.tracing:
            explain_tracing(self.role)
        self.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=props.batch_size,
                max_batching_window=cdk.Duration.seconds(props.batching_window) if props.batching_window else None,
                max_concurrency=props.max_concurrency,
                report_batch_item_failures=True,
            )
        )


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
