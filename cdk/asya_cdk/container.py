"""Container actors: what `runtime: container` builds instead of a Lambda function.

- The actor's queue, exactly as a Lambda actor's (`actor_queue`), its visibility timeout the one the
  consumer's heartbeats keep extending (`container.visibility`).
- A task definition running the actor's image (the one `package: image` builds: the sidecar, the
  actor's libraries and code) with `python3 -m asya.consumer`, the actor's variables plus where its
  queue is and how many hops run at once, logging to its own log group.
- The task role, which the mesh grants what a Lambda actor of the same config gets, plus consuming its
  own queue and protecting its tasks from scale-in (`asya.consumer.protection`); an execution role
  that pulls the image and writes the logs, and nothing else.
- An ECS service in the mesh's cluster (Fargate) or, with `gpu`, on its own GPU capacity
  (`asya_cdk.container_capacity`), scaled on its queue's backlog from zero (`asya_cdk.container_scaling`),
  as the mesh's x-backlog publishes it (`asya_cdk.container_backlog`).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.container_variables import CONSUMER_BATCH_SIZE, CONSUMER_CONCURRENCY, HOP_TIME_LIMIT, QUEUE_URL, STOP_GRACE
from asya.names import resource_name
from asya_cdk.actor import actor_queue, grant_trace_segments, log_group
from asya_cdk.actor_config import ActorConfig
from asya_cdk.container_backlog import backlog_metric
from asya_cdk.container_capacity import gpu_capacity, insights_cluster
from asya_cdk.container_config import ContainerConfig
from asya_cdk.container_scaling import scale_on_backlog
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.nag import acknowledge
from asya_cdk.needs import VpcSettings
from asya_cdk.packaging import IMAGE_PLATFORMS

CONSUMER_COMMAND = ["python3", "-m", "asya.consumer"]  # helper G's loop, in the image's /var/task
TASK_ROOT = "/var/task"  # where the image holds the sidecar and the actor's code (AWS's Lambda base image)
MESH_CLUSTER = "containers"  # the mesh's cluster: `asya-<ns>-containers`
# What every consumer process needs from Python and Powertools in a task, beside the actor's variables:
# - unbuffered output: the awslogs driver reads a pipe, to which Python would write in blocks: logs and
#   metric lines late, lost with a process that dies, and the lines of several processes cut mid-line;
# - Powertools' Tracer off: AWS's Lambda base image sets LAMBDA_TASK_ROOT, from which the Tracer
#   believes it runs in Lambda and patches boto3, each call then logging "Subsegment ... discarded due
#   to Lambda worker still initializing". A hop's own segment (`asya.xray`) needs no Tracer.
CONSUMER_RUNTIME = {"PYTHONUNBUFFERED": "1", "POWERTOOLS_TRACE_DISABLED": "true"}
_ARCHITECTURES = {"arm64": ecs.CpuArchitecture.ARM64, "x86_64": ecs.CpuArchitecture.X86_64}


def consumer_environment(settings: ActorConfig, queue_url: str) -> dict[str, str]:
    """What the consumer reads beside the sidecar's variables: its queue, hops at once, the most a
    batch may take (as a Lambda actor's function timeout: `timeout` for each of its hops, and 10 s) and
    the grace ECS gives it after SIGTERM; and `CONSUMER_RUNTIME`."""
    container = settings.container
    assert container is not None  # every container actor has its settings
    return {
        **CONSUMER_RUNTIME,
        QUEUE_URL.name: queue_url,
        CONSUMER_CONCURRENCY.name: str(container.concurrency),
        HOP_TIME_LIMIT.name: f"{settings.container_batch_time:g}",
        STOP_GRACE.name: f"{container.stop_timeout:g}",
        CONSUMER_BATCH_SIZE.name: str(settings.consumer_batch_size),
    }


def service_cluster(namespace: str, name: str, container: ContainerConfig) -> str:
    """The cluster of the actor's service: a GPU actor's own, named as the actor, else the mesh's."""
    return resource_name(namespace, name if container.gpu else MESH_CLUSTER)


def container_services(mesh: LoadedMesh) -> dict[str, dict[str, str | int]]:
    """Each container actor's service, its cluster and its most tasks: the stack's `ContainerServices`
    output, from which the console and `asya queues` ask ECS for the tasks running (one
    `DescribeServices` per cluster), and a mesh without container actors is asked nothing new."""
    namespace = mesh.config.namespace
    return {
        name: {
            "cluster": service_cluster(namespace, name, actor.container),
            "service": resource_name(namespace, name),
            "max": actor.container.max,
        }
        for name, actor in sorted(mesh.config.actors.items())
        if actor.runtime == "container" and actor.container is not None
    }


def task_protection(stack: cdk.Stack, cluster_name: str) -> iam.PolicyStatement:
    """What the ECS agent needs of the task role to set the task's scale-in protection for the
    consumer: `UpdateTaskProtection` (the consumer never reads it back: no `GetTaskProtection`), on the
    tasks of the actor's cluster, the narrowest resource IAM takes, as task ids are made at launch."""
    tasks = stack.format_arn(service="ecs", resource="task", resource_name=f"{cluster_name}/*")
    return iam.PolicyStatement(actions=["ecs:UpdateTaskProtection"], resources=[tasks])


def mesh_cluster(scope: Construct, namespace: str) -> ecs.CfnCluster:
    """The cluster of the mesh's Fargate actors."""
    return insights_cluster(scope, "Containers", resource_name(namespace, MESH_CLUSTER))


class ContainerActor(Construct):
    """Exposes `queue`, `role` (the task role), `log_group`, `task_definition`, `container`, `cluster`
    (and `cluster_name`), `service`, `scaling`, and `gpu` (a `GpuCapacity`, None on Fargate)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        namespace: str,
        name: str,
        settings: ActorConfig,
        image: str,
        environment: dict[str, str],
        dead_letter_queue: sqs.IQueue,
        cluster: ecs.CfnCluster | None,
    ) -> None:
        super().__init__(scope, construct_id)
        container = settings.container
        assert container is not None  # the config gives every container actor its settings
        assert settings.vpc is not None  # ... and requires its subnets
        self.full_name = full_name = resource_name(namespace, name)
        stack = cdk.Stack.of(self)
        self.queue = actor_queue(self, full_name, settings, dead_letter_queue)
        self.log_group = log_group(self, "Logs", f"/aws/ecs/{full_name}", settings.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            # only ECS tasks of this account and region (AWS's confused-deputy conditions for task roles)
            assumed_by=iam.ServicePrincipal(
                "ecs-tasks.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:ecs:{stack.region}:{stack.account}:*"},
                },
            ),
            description=f"asya actor {namespace}/{name}",
        )
        self.queue.grant_consume_messages(self.role)  # receive, delete, extend visibility: the consumer's loop
        if settings.tracing:  # a task runs no X-Ray daemon: its hops' segments are sent with the API
            grant_trace_segments(self.role)
        self.task_definition = self._task_definition(full_name, settings, container)
        self.container = self.task_definition.add_container(
            "Consumer",
            image=ecs.ContainerImage.from_asset(image, platform=IMAGE_PLATFORMS[settings.architecture]),
            entry_point=CONSUMER_COMMAND,
            working_directory=TASK_ROOT,
            environment={**environment, **consumer_environment(settings, self.queue.queue_url)},
            logging=ecs.LogDrivers.aws_logs(stream_prefix="consumer", log_group=self.log_group),
            stop_timeout=cdk.Duration.seconds(container.stop_timeout),
            gpu_count=container.gpu or None,
            memory_limit_mib=container.memory if container.gpu else None,
            cpu=container.cpu_units if container.gpu else None,
        )
        self.gpu = gpu_capacity(self, full_name, settings.vpc, container) if container.gpu else None
        self.cluster = self.gpu.cluster if self.gpu is not None else cluster
        assert self.cluster is not None  # the mesh makes its cluster when it has a Fargate actor
        # by name, as the dashboard in the main stack may not reference a nested stack's cluster
        self.cluster_name = service_cluster(namespace, name, container)
        self.role.add_to_policy(task_protection(stack, self.cluster_name))
        self.service = self._service(full_name, settings.vpc, container, self.cluster)
        backlog = backlog_metric(namespace, name)  # x-backlog's (`asya_cdk.container_backlog`)
        self.scaling = scale_on_backlog(
            self, name=full_name, service=self.service, backlog=backlog, container=container
        )
        _explain_findings(self)

    def _task_definition(self, family: str, settings: ActorConfig, container: ContainerConfig) -> ecs.TaskDefinition:
        if container.gpu:
            return ecs.Ec2TaskDefinition(
                self, "Task", family=family, task_role=self.role, network_mode=ecs.NetworkMode.AWS_VPC
            )
        return ecs.FargateTaskDefinition(
            self,
            "Task",
            family=family,
            task_role=self.role,
            cpu=container.cpu_units,
            memory_limit_mib=container.memory,
            ephemeral_storage_gib=container.storage,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=_ARCHITECTURES[settings.architecture],
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
        )

    def _service(
        self, name: str, vpc: VpcSettings, container: ContainerConfig, cluster: ecs.CfnCluster
    ) -> ecs.CfnService:
        network = ecs.CfnService.AwsVpcConfigurationProperty(
            subnets=vpc.subnets,
            security_groups=vpc.security_groups,
            assign_public_ip="ENABLED" if container.public_ip else "DISABLED",
        )
        service = ecs.CfnService(
            self,
            "Service",
            service_name=name,
            cluster=cluster.ref,
            task_definition=self.task_definition.task_definition_arn,
            desired_count=container.min,
            launch_type=None if container.gpu else "FARGATE",
            capacity_provider_strategy=(
                [ecs.CfnService.CapacityProviderStrategyItemProperty(capacity_provider=self.gpu.provider.ref, weight=1)]
                if self.gpu is not None
                else None
            ),
            network_configuration=ecs.CfnService.NetworkConfigurationProperty(awsvpc_configuration=network),
            # a task stopped by a deployment drains (SIGTERM, `stop_timeout`); with no task needed, none starts
            deployment_configuration=ecs.CfnService.DeploymentConfigurationProperty(
                minimum_healthy_percent=0,
                maximum_percent=200,
                deployment_circuit_breaker=ecs.CfnService.DeploymentCircuitBreakerProperty(enable=True, rollback=True),
            ),
            enable_ecs_managed_tags=True,
            propagate_tags="SERVICE",
        )
        if self.gpu is not None:
            service.node.add_dependency(self.gpu.associations)
        return service


def _explain_findings(actor: ContainerActor) -> None:
    """cdk-nag findings that are deliberate, each acknowledged on the resource it is about."""
    acknowledge(
        actor.task_definition,
        "ECS2",
        "The consumer's settings are names of the mesh's own resources and the handler's settings, as a "
        "Lambda actor's environment holds them; secrets are read at start from Secrets Manager or Parameter "
        "Store (`secrets:`), never put in the task definition.",
    )
    tasks = f"arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/{actor.cluster_name}/*"
    acknowledge(
        actor.role,
        f"IAM5[Resource::{tasks}]",
        "Task ids are made when ECS starts a task: the consumer may set the scale-in protection of tasks of "
        "its actor's cluster (a GPU actor's own, the mesh's for Fargate actors) and nothing else.",
    )
    # Its trust policy is left as AWS documents an execution role's, unconditioned: AWS documents the
    # confused-deputy conditions (`aws:SourceAccount`, `aws:SourceArn`) for a task role only, and a
    # condition ECS does not send when it assumes this role would keep every task from starting.
    execution = actor.task_definition.execution_role
    assert execution is not None  # made for the image's pull and the logs
    acknowledge(
        execution,
        "IAM5[Resource::*]",
        "ecr:GetAuthorizationToken takes no resource: the execution role may ask for a registry token, and "
        "pull this actor's image repository only.",
    )
