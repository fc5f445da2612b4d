"""Container actors: what `runtime: container` builds instead of a Lambda function.

- The actor's queue, exactly as a Lambda actor's (`actor_queue`), its visibility timeout the one the
  consumer's heartbeats keep extending (`container.visibility`).
- A task definition running the actor's image (the one `package: image` builds: the sidecar, the
  actor's libraries and code) with `python3 -m asya.consumer`, the actor's variables plus where its
  queue is and how many hops run at once, logging to its own log group.
- The task role, which the mesh grants what a Lambda actor of the same config gets, plus consuming its
  own queue; an execution role that pulls the image and writes the logs, and nothing else.
- An ECS service in the mesh's cluster (Fargate) or, with `gpu`, in a cluster of its own whose
  capacity provider is an Auto Scaling group of GPU instances at 0 with ECS managed scaling: a cluster
  has one set of capacity providers, and an actor in a nested stack may not add to the main stack's.
- Scaling from zero: the number of tasks wanted is the backlog (messages visible and in flight) over
  `messages_per_task`, a CloudWatch metric math; while it is above 0 the service is set to that many
  tasks (between `min` and `max`), and after `scale_in_cooldown` with no backlog to `min`.
"""

from __future__ import annotations

import math

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.names import resource_name
from asya_cdk.actor import actor_queue, log_group
from asya_cdk.actor_config import ActorConfig
from asya_cdk.container_config import ContainerConfig
from asya_cdk.nag import acknowledge
from asya_cdk.packaging import IMAGE_PLATFORMS

CONSUMER_COMMAND = ["python3", "-m", "asya.consumer"]  # helper G's loop, in the image's /var/task
TASK_ROOT = "/var/task"  # where the image holds the sidecar and the actor's code (AWS's Lambda base image)
# the consumer's own variables (`asya.variables`, Component.CONTAINER)
QUEUE_URL = "ASYA_QUEUE_URL"
CONSUMER_CONCURRENCY = "ASYA_CONSUMER_CONCURRENCY"
CONSUMER_BATCH_SIZE = "ASYA_CONSUMER_BATCH_SIZE"
HOP_TIME_LIMIT = "ASYA_HOP_TIME_LIMIT_SECONDS"
STOP_GRACE = "ASYA_STOP_GRACE_SECONDS"
MESH_CLUSTER = "containers"  # the mesh's cluster: `asya-<ns>-containers`
MAX_STEPS = 20  # Application Auto Scaling: step adjustments in one policy
SCALING_PERIOD = cdk.Duration.minutes(1)  # SQS publishes its queue metrics each minute
_ARCHITECTURES = {"arm64": ecs.CpuArchitecture.ARM64, "x86_64": ecs.CpuArchitecture.X86_64}


def consumer_environment(settings: ActorConfig, queue_url: str) -> dict[str, str]:
    """What the consumer reads beside the sidecar's variables: its queue, hops at once, the most a hop
    may take (the actor's `timeout`) and the grace ECS gives it after SIGTERM."""
    container = settings.container
    assert container is not None  # every container actor has its settings
    variables = {
        QUEUE_URL: queue_url,
        CONSUMER_CONCURRENCY: str(container.concurrency),
        HOP_TIME_LIMIT: f"{settings.timeout:g}",
        STOP_GRACE: f"{container.stop_timeout:g}",
    }
    if "batch_size" in settings.model_fields_set:
        variables[CONSUMER_BATCH_SIZE] = str(settings.batch_size)
    return variables


def mesh_cluster(scope: Construct, namespace: str) -> ecs.CfnCluster:
    """The cluster of the mesh's Fargate actors, with Container Insights (per-task CPU and memory)."""
    return ecs.CfnCluster(
        scope,
        "Containers",
        cluster_name=resource_name(namespace, MESH_CLUSTER),
        cluster_settings=[ecs.CfnCluster.ClusterSettingsProperty(name="containerInsights", value="enabled")],
    )


class ContainerActor(Construct):
    """Exposes `queue`, `role` (the task role), `log_group`, `task_definition`, `container`,
    `service`, `scaling` and, for a GPU actor, `cluster`, `capacity_provider` and `instances`."""

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
        self.full_name = full_name = resource_name(namespace, name)
        stack = cdk.Stack.of(self)
        self.queue = actor_queue(self, full_name, settings, dead_letter_queue)
        self.log_group = log_group(self, "Logs", f"/aws/ecs/{full_name}", settings.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "ecs-tasks.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description=f"asya actor {namespace}/{name}",
        )
        self.queue.grant_consume_messages(self.role)  # receive, delete, extend visibility: the consumer's loop
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
        self.cluster = cluster
        self.capacity_provider: ecs.CfnCapacityProvider | None = None
        if container.gpu:
            self.cluster = mesh_cluster_for_gpu(self, full_name)
            self.capacity_provider = self._gpu_capacity(full_name, settings, container, self.cluster)
        assert self.cluster is not None  # the mesh makes its cluster when it has a Fargate actor
        # by name, as the dashboard in the main stack may not reference a nested stack's cluster
        self.cluster_name = full_name if container.gpu else resource_name(namespace, MESH_CLUSTER)
        self.service = self._service(full_name, settings, container, self.cluster)
        self.scaling = self._scaling(container)
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
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=_ARCHITECTURES[settings.architecture],
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
        )

    def _service(
        self, name: str, settings: ActorConfig, container: ContainerConfig, cluster: ecs.CfnCluster
    ) -> ecs.CfnService:
        assert settings.vpc is not None
        network = ecs.CfnService.AwsVpcConfigurationProperty(
            subnets=settings.vpc.subnets,
            security_groups=settings.vpc.security_groups,
            assign_public_ip="ENABLED" if container.public_ip and not container.gpu else "DISABLED",
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
                [
                    ecs.CfnService.CapacityProviderStrategyItemProperty(
                        capacity_provider=self.capacity_provider.ref, weight=1
                    )
                ]
                if self.capacity_provider is not None
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
        if self.capacity_provider is not None:
            service.node.add_dependency(self._associations)
        return service

    def _gpu_capacity(
        self, name: str, settings: ActorConfig, container: ContainerConfig, cluster: ecs.CfnCluster
    ) -> ecs.CfnCapacityProvider:
        """GPU instances for this actor's tasks: an Auto Scaling group from 0 on ECS's GPU-optimized AMI,
        grown and shrunk by ECS managed scaling as tasks need places (termination protected while a
        task runs on an instance, drained before one goes)."""
        assert settings.vpc is not None
        self.instance_role = instance_role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"asya GPU instances of {name}: join the cluster",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(ECS_INSTANCE_POLICY)],
        )
        user_data = ec2.UserData.for_linux()
        user_data.add_commands(f"echo ECS_CLUSTER={cluster.ref} >> /etc/ecs/ecs.config")
        self.launch_template = ec2.LaunchTemplate(
            self,
            "Instances",
            machine_image=ecs.EcsOptimizedImage.amazon_linux2(ecs.AmiHardwareType.GPU),
            instance_type=ec2.InstanceType(container.gpu_instance_type),
            role=instance_role,
            user_data=user_data,
            require_imdsv2=True,
            security_group=None,
            block_devices=[
                ec2.BlockDevice(
                    device_name="/dev/xvda",
                    volume=ec2.BlockDeviceVolume.ebs(100, encrypted=True, volume_type=ec2.EbsDeviceVolumeType.GP3),
                )
            ],
        )
        template = self.launch_template.node.default_child
        assert isinstance(template, ec2.CfnLaunchTemplate)
        template.add_property_override("LaunchTemplateData.SecurityGroupIds", settings.vpc.security_groups)
        self.instances = autoscaling.CfnAutoScalingGroup(
            self,
            "Group",
            min_size="0",
            max_size=str(container.max),
            vpc_zone_identifier=settings.vpc.subnets,
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=self.launch_template.launch_template_id,
                version=self.launch_template.latest_version_number,
            ),
            new_instances_protected_from_scale_in=True,  # ECS lifts it when the instance has no task
        )
        provider = ecs.CfnCapacityProvider(
            self,
            "Capacity",
            name=name,
            auto_scaling_group_provider=ecs.CfnCapacityProvider.AutoScalingGroupProviderProperty(
                auto_scaling_group_arn=self.instances.ref,
                managed_scaling=ecs.CfnCapacityProvider.ManagedScalingProperty(
                    status="ENABLED", target_capacity=100, minimum_scaling_step_size=1, maximum_scaling_step_size=10
                ),
                managed_termination_protection="ENABLED",
                managed_draining="ENABLED",
            ),
        )
        self._associations = ecs.CfnClusterCapacityProviderAssociations(
            self,
            "Providers",
            cluster=cluster.ref,
            capacity_providers=[provider.ref],
            default_capacity_provider_strategy=[
                ecs.CfnClusterCapacityProviderAssociations.CapacityProviderStrategyProperty(
                    capacity_provider=provider.ref, weight=1
                )
            ],
        )
        return provider

    def _scaling(self, container: ContainerConfig) -> appscaling.ScalableTarget:
        """Tasks wanted = backlog / `messages_per_task`, set exactly while there is a backlog, and `min`
        after `scale_in_cooldown` without one."""
        target = appscaling.ScalableTarget(
            self,
            "Scaling",
            service_namespace=appscaling.ServiceNamespace.ECS,
            resource_id=f"service/{self.service.cluster}/{self.service.attr_name}",
            scalable_dimension="ecs:service:DesiredCount",
            min_capacity=container.min,
            max_capacity=container.max,
            role=iam.Role.from_role_arn(self, "ScalingRole", scaling_role_arn(cdk.Stack.of(self)), mutable=False),
        )
        target.node.add_dependency(self.service)
        wanted = cloudwatch.MathExpression(
            expression=f"(visible + inflight) / {container.messages_per_task}",
            using_metrics={
                "visible": self.queue.metric_approximate_number_of_messages_visible(
                    period=SCALING_PERIOD, statistic="Maximum"
                ),
                "inflight": self.queue.metric_approximate_number_of_messages_not_visible(
                    period=SCALING_PERIOD, statistic="Maximum"
                ),
            },
            label="tasks wanted",
            period=SCALING_PERIOD,
        )
        out = appscaling.StepScalingAction(
            self,
            "ScaleOut",
            scaling_target=target,
            adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
            cooldown=SCALING_PERIOD,
            metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
        )
        for lower, upper, tasks in task_steps(container.min, container.max):
            out.add_adjustment(adjustment=tasks, lower_bound=lower, upper_bound=upper)
        backlog = cloudwatch.Alarm(
            self,
            "Backlog",
            alarm_description=f"{self.full_name}: messages waiting or in flight; tasks follow the backlog",
            metric=wanted,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        backlog.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(out))
        idle = appscaling.StepScalingAction(
            self,
            "ScaleIn",
            scaling_target=target,
            adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
            cooldown=cdk.Duration.seconds(container.scale_in_cooldown),
        )
        idle.add_adjustment(adjustment=container.min, upper_bound=0)
        empty = cloudwatch.Alarm(
            self,
            "Idle",
            alarm_description=f"{self.full_name}: no message for the cool-down; the service goes to its minimum",
            metric=wanted,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=max(1, math.ceil(container.scale_in_cooldown / SCALING_PERIOD.to_seconds())),
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
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


# What an ECS container instance needs to join its cluster and run tasks: AWS's managed policy for it
ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"


def mesh_cluster_for_gpu(scope: Construct, name: str) -> ecs.CfnCluster:
    """A GPU actor's own cluster (see the module's docstring), with Container Insights."""
    return ecs.CfnCluster(
        scope,
        "Cluster",
        cluster_name=name,
        cluster_settings=[ecs.CfnCluster.ClusterSettingsProperty(name="containerInsights", value="enabled")],
    )


def _explain_findings(actor: ContainerActor) -> None:
    """cdk-nag findings that are deliberate, each acknowledged on the resource it is about."""
    acknowledge(
        actor.task_definition,
        "ECS2",
        "The consumer's settings are names of the mesh's own resources and the handler's settings, as a "
        "Lambda actor's environment holds them; secrets are read at start from Secrets Manager or Parameter "
        "Store (`secrets:`), never put in the task definition.",
    )
    execution = actor.task_definition.execution_role
    assert execution is not None  # made for the image's pull and the logs
    acknowledge(
        execution,
        "IAM5[Resource::*]",
        "ecr:GetAuthorizationToken takes no resource: the execution role may ask for a registry token, and "
        "pull this actor's image repository only.",
    )
    if actor.capacity_provider is not None:
        acknowledge(
            actor.instance_role,
            f"IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{ECS_INSTANCE_POLICY}]",
            "A GPU instance joins the actor's cluster with ECS's agent; AWS's managed policy grants exactly the "
            "agent's actions.",
        )
        acknowledge(
            actor.instances,
            "AS3",
            "The Auto Scaling group is ECS's (managed scaling): its activity is in the service's events and "
            "Container Insights, not a notification topic.",
        )
