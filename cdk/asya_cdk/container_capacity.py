"""Where a container actor's tasks run: the mesh's Fargate cluster, or a GPU actor's own capacity.

A GPU actor's tasks are placed on an Auto Scaling group of `instance_type` on ECS's GPU-optimized AMI
(Amazon Linux 2023: the Amazon Linux 2 one reached its end of support on 2026-06-30; its public SSM
parameter is resolved by CloudFormation at each deploy, so a synth needs no account), from 0
instances, grown and shrunk by ECS managed scaling as tasks wait for a place (termination
protected while a task runs on an instance, drained before one goes). It has a cluster of its own: a
cluster has one set of capacity providers (`AWS::ECS::ClusterCapacityProviderAssociations`), and an
actor in a nested stack may not add to the main stack's.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya_cdk.container_config import ROOT_VOLUME_GB, ContainerConfig
from asya_cdk.nag import acknowledge
from asya_cdk.needs import VpcSettings

# What an ECS container instance needs to join its cluster and run tasks: AWS's managed policy for it
ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"


def insights_cluster(scope: Construct, construct_id: str, name: str) -> ecs.CfnCluster:
    """A cluster with Container Insights (per-task CPU, memory, and the tasks running and wanted)."""
    return ecs.CfnCluster(
        scope,
        construct_id,
        cluster_name=name,
        cluster_settings=[ecs.CfnCluster.ClusterSettingsProperty(name="containerInsights", value="enabled")],
    )


@dataclass(frozen=True)
class GpuCapacity:
    cluster: ecs.CfnCluster
    provider: ecs.CfnCapacityProvider
    associations: ecs.CfnClusterCapacityProviderAssociations
    instances: autoscaling.CfnAutoScalingGroup
    instance_role: iam.Role


def gpu_capacity(scope: Construct, name: str, vpc: VpcSettings, container: ContainerConfig) -> GpuCapacity:
    """The actor's cluster `name`, its Auto Scaling group from 0 in the actor's subnets and security
    groups, and the capacity provider that scales it, as the cluster's only one."""
    cluster = insights_cluster(scope, "Cluster", name)
    instance_role = iam.Role(
        scope,
        "InstanceRole",
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description=f"asya GPU instances of {name}: join the cluster",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(ECS_INSTANCE_POLICY)],
    )
    user_data = ec2.UserData.for_linux()
    user_data.add_commands(f"echo ECS_CLUSTER={cluster.ref} >> /etc/ecs/ecs.config")
    launch_template = ec2.LaunchTemplate(
        scope,
        "Instances",
        machine_image=ecs.EcsOptimizedImage.amazon_linux2023(ecs.AmiHardwareType.GPU),
        instance_type=ec2.InstanceType(container.gpu_instance_type),
        role=instance_role,
        user_data=user_data,
        require_imdsv2=True,
        block_devices=[
            ec2.BlockDevice(
                device_name="/dev/xvda",
                volume=ec2.BlockDeviceVolume.ebs(
                    ROOT_VOLUME_GB, encrypted=True, volume_type=ec2.EbsDeviceVolumeType.GP3
                ),
            )
        ],
    )
    template = launch_template.node.default_child
    assert isinstance(template, ec2.CfnLaunchTemplate)
    template.add_property_override("LaunchTemplateData.SecurityGroupIds", vpc.security_groups)
    instances = autoscaling.CfnAutoScalingGroup(
        scope,
        "Group",
        min_size="0",
        max_size=str(container.max),
        vpc_zone_identifier=vpc.subnets,
        launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
            launch_template_id=launch_template.launch_template_id,
            version=launch_template.latest_version_number,
        ),
        new_instances_protected_from_scale_in=True,  # ECS lifts it when the instance has no task
    )
    provider = ecs.CfnCapacityProvider(
        scope,
        "Capacity",
        name=name,
        auto_scaling_group_provider=ecs.CfnCapacityProvider.AutoScalingGroupProviderProperty(
            auto_scaling_group_arn=instances.ref,
            managed_scaling=ecs.CfnCapacityProvider.ManagedScalingProperty(
                status="ENABLED", target_capacity=100, minimum_scaling_step_size=1, maximum_scaling_step_size=10
            ),
            managed_termination_protection="ENABLED",
            managed_draining="ENABLED",
        ),
    )
    strategy = ecs.CfnClusterCapacityProviderAssociations.CapacityProviderStrategyProperty(
        capacity_provider=provider.ref, weight=1
    )
    associations = ecs.CfnClusterCapacityProviderAssociations(
        scope,
        "Providers",
        cluster=cluster.ref,
        capacity_providers=[provider.ref],
        default_capacity_provider_strategy=[strategy],
    )
    acknowledge(
        instance_role,
        f"IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{ECS_INSTANCE_POLICY}]",
        "A GPU instance joins the actor's cluster with ECS's agent; AWS's managed policy grants exactly the "
        "agent's actions.",
    )
    acknowledge(
        instances,
        "AS3",
        "The Auto Scaling group is ECS's (managed scaling): its activity is in the service's events and "
        "Container Insights, not a notification topic.",
    )
    return GpuCapacity(cluster, provider, associations, instances, instance_role)
