"""`ActorFunction`: a queue, a Lambda function and the event source mapping between them.

Safe defaults: the queue is encrypted and TLS-only, its visibility timeout is six times the function
timeout, repeated delivery failures are redriven to a dead-letter target (never dropped), the event
source reports partial batch failures, and the function's role can only consume its own queue and
write its own log group; the mesh grants it the queues it sends to (`asya_cdk.queue_grants`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from asya.names import resource_name
from asya_cdk.actor_config import SYSTEM_LOG_LEVEL
from asya_cdk.layer import RUNTIME, SidecarLayer

if TYPE_CHECKING:
    from asya_cdk.actor_config import QueueFunctionConfig
    from asya_cdk.needs import VpcSettings

LIVE_ALIAS = "live"  # the alias an actor with provisioned concurrency is invoked through


@dataclass(frozen=True)
class FunctionOptions:
    """What only some functions set: /tmp's size (MB), a VPC, layers beside the sidecar's, and warm
    environments kept ready (served through the `live` alias, which the event source then invokes)."""

    ephemeral_storage: int | None = None
    vpc: VpcSettings | None = None
    layers: list[str] = field(default_factory=list)
    provisioned_concurrency: int | None = None


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
        code: lambda_.Code,
        layer: SidecarLayer,
        environment: dict[str, str],
        dead_letter_queue: sqs.IQueue | None,
        handler: str,
        retention: cdk.Duration | None = None,
        options: FunctionOptions | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        function_name = resource_name(namespace, name)
        self.queue = actor_queue(self, function_name, settings, dead_letter_queue, retention)
        self.log_group = log_group(self, "Logs", f"/aws/lambda/{function_name}", settings.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"asya actor {namespace}/{name}",
        )
        self.log_group.grant_write(self.role)
        self.function = mesh_lambda(
            self,
            name=function_name,
            role=self.role,
            log_group=self.log_group,
            handler=handler,
            code=code,
            environment=environment,
            layer=layer,
            memory=settings.memory,
            timeout=cdk.Duration.seconds(settings.lambda_timeout),
            tracing=settings.tracing,
            reserved_concurrency=settings.reserved_concurrency,
            options=options,
            system_log_level=settings.system_log_level,
        )
        # with warm environments, the event source invokes them: the alias they are kept for
        self.invoked: lambda_.IFunction = self.function
        if options is not None and options.provisioned_concurrency:
            self.invoked = lambda_.Alias(
                self,
                "Live",
                alias_name=LIVE_ALIAS,
                version=self.function.current_version,
                provisioned_concurrent_executions=options.provisioned_concurrency,
            )
        self.invoked.add_event_source(
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


def actor_queue(
    scope: Construct,
    queue_name: str,
    settings: QueueFunctionConfig,
    dead_letter_queue: sqs.IQueue | None,
    retention: cdk.Duration | None = None,
) -> sqs.Queue:
    """An actor's queue, whichever runtime consumes it: encrypted, TLS-only, hidden for the settings'
    visibility timeout, redriven after `max_receive_count` receives."""
    dead_letter = (
        sqs.DeadLetterQueue(queue=dead_letter_queue, max_receive_count=settings.max_receive_count)
        if dead_letter_queue is not None
        else None
    )
    return sqs.Queue(
        scope,
        "Queue",
        queue_name=queue_name,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        visibility_timeout=cdk.Duration.seconds(settings.visibility_timeout),
        retention_period=retention or cdk.Duration.seconds(settings.retention),
        dead_letter_queue=dead_letter,
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
    options: FunctionOptions | None = None,
    system_log_level: str = SYSTEM_LOG_LEVEL,
) -> lambda_.Function:
    """Every Lambda function of the mesh, an actor's or the mesh's own: on the sidecar layer (or, for a
    container image, with the sidecar inside), with JSON logs into its own log group, its own role,
    and X-Ray only when asked for. Lambda's own lines are kept at `system_log_level` (WARN unless the
    mesh file says otherwise: no start and report line per successful invocation, whose numbers are
    Lambda's `Duration` and `Errors` metrics already); the application's level is left unset, so the
    function's own lines and metric lines are filtered at Lambda's default, INFO, as before."""
    options = options or FunctionOptions()
    image = isinstance(code, lambda_.AssetImageCode)
    function = lambda_.Function(
        scope,
        "Function",
        function_name=name,
        runtime=lambda_.Runtime.FROM_IMAGE if image else RUNTIME,
        architecture=layer.architecture,
        handler=lambda_.Handler.FROM_IMAGE if image else handler,
        code=code,
        layers=None if image else [layer.layer, *_layers(scope, options.layers)],
        environment=environment,
        memory_size=memory,
        timeout=timeout,
        reserved_concurrent_executions=reserved_concurrency,
        role=role,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        system_log_level_v2=lambda_.SystemLogLevel(system_log_level),
        tracing=lambda_.Tracing.ACTIVE if tracing else lambda_.Tracing.DISABLED,
        ephemeral_storage_size=cdk.Size.mebibytes(options.ephemeral_storage) if options.ephemeral_storage else None,
    )
    if options.vpc is not None:
        in_vpc(function, role, options.vpc)
    if tracing:
        explain_tracing(role)
    return function


def _layers(scope: Construct, arns: list[str]) -> list[lambda_.ILayerVersion]:
    return [lambda_.LayerVersion.from_layer_version_arn(scope, f"Layer{i}", arn) for i, arn in enumerate(arns)]


# What Lambda needs of a function's role to make, describe and remove its network interfaces in a VPC:
# AWS's managed policy for it, whose actions take no narrower resource.
VPC_ACCESS_POLICY = "service-role/AWSLambdaVPCAccessExecutionRole"


def in_vpc(function: lambda_.Function, role: iam.IRole, vpc: VpcSettings) -> None:
    """The function in the given subnets and security groups (no VPC lookup at synth: the ids are the
    mesh file's), with the managed policy Lambda's network interfaces need."""
    role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(VPC_ACCESS_POLICY))
    resource = function.node.default_child
    assert isinstance(resource, lambda_.CfnFunction)
    resource.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
        subnet_ids=vpc.subnets, security_group_ids=vpc.security_groups
    )
    cdk.Validations.of(role).acknowledge(
        cdk.Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{VPC_ACCESS_POLICY}]",
            reason="A function in a VPC needs Lambda's network interface actions (create, describe, delete, "
            "assign addresses), which take no narrower resource; AWS's managed policy grants exactly those.",
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


def grant_trace_segments(role: iam.IRole) -> None:
    """Where hops run without an X-Ray daemon (a Spark job, an ECS task), `asya.xray` sends their
    segments with `xray:PutTraceSegments`, its only X-Ray call."""
    role.add_to_principal_policy(iam.PolicyStatement(actions=["xray:PutTraceSegments"], resources=["*"]))
    explain_tracing(role)


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
