"""A task definition a template creates keeps its roles and sizes, as on AWS.

moto 5.2.5 registers an `AWS::ECS::TaskDefinition` with its family, containers, volumes and memory only,
and drops `TaskRoleArn`, `ExecutionRoleArn`, `Cpu`, `NetworkMode`, `RequiresCompatibilities` and
`RuntimePlatform`: a container actor's task definition read back from the endpoint
(`ecs.describe_task_definition`) would name no task role, and the local runtime of container actors
could not know whose session its consumer runs with, as a Lambda actor's worker runs with its
function's role. `apply_task_definition_fix()` wraps moto's creation so those are registered too.
"""

from __future__ import annotations

from typing import Any

from moto.core.utils import pascal_to_camelcase, remap_nested_keys
from moto.ecs.models import TaskDefinition, ecs_backends

_moto_create = TaskDefinition.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]


def _create_from_cloudformation_json(
    cls: type[TaskDefinition],
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kwargs: Any,
) -> TaskDefinition:
    """moto's registration, with the properties it drops; a template without them registers as before."""
    properties = cloudformation_json.get("Properties", {})
    if "Family" not in properties:
        return _moto_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)  # type: ignore[no-any-return]
    platform = properties.get("RuntimePlatform")
    return ecs_backends[account_id][region_name].register_task_definition(
        family=properties["Family"],
        container_definitions=remap_nested_keys(properties.get("ContainerDefinitions", []), pascal_to_camelcase),
        volumes=remap_nested_keys(properties.get("Volumes", []), pascal_to_camelcase),
        network_mode=properties.get("NetworkMode"),
        requires_compatibilities=properties.get("RequiresCompatibilities"),
        cpu=properties.get("Cpu"),
        memory=properties.get("Memory"),
        task_role_arn=properties.get("TaskRoleArn"),
        execution_role_arn=properties.get("ExecutionRoleArn"),
        runtime_platform=remap_nested_keys(platform, pascal_to_camelcase) if platform else None,
    )


def apply_task_definition_fix() -> None:
    TaskDefinition.create_from_cloudformation_json = classmethod(_create_from_cloudformation_json)  # type: ignore[assignment,method-assign,arg-type]
