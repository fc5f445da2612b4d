"""The mesh's container actors as the local stack runs them: found in the synthesized templates by
their task definitions, each a `LocalFunction` whose trigger (`ContainerTrigger`) is its queue and
its scaling rule.

The contract with the CDK app (`asya_cdk.container`), documented in docs/local-stack.md: a container
actor is an `AWS::ECS::TaskDefinition` whose container's environment sets `ASYA_QUEUE_URL`; its
family is the actor's resource name (`asya-<ns>-<actor>`), its `TaskRoleArn` the role its tasks
assume, its image the folder the image is built from. The environment is read back from the local
endpoint (`DescribeTaskDefinition`: references resolved, as a task gets it); the task role is found
among the stacks' resources by the logical id the template names (what a deploy made of it). How many
consumers may run and how much backlog each is given come from the actor's `container` settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from asya import variables
from asya.names import resource_name
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.deploy import Synthesized
from asya_local.deployed_functions import ContainerTrigger, LocalFunction, image_dir
from asya_local.functions.lambda_shapes import ACCOUNT

TASK_DEFINITION = "AWS::ECS::TaskDefinition"
CONSUMER = "asya.consumer"  # what a container actor's worker runs: `python -m asya.consumer`
# a container actor's scaling when its settings do not say (those of `container` in docs/mesh.md)
DEFAULT_MAX, DEFAULT_PER_TASK = 4, 10


def container_actors(
    client: Callable[[str], Any], synthesized: Synthesized, scaling: Callable[[str], tuple[int, int, int]]
) -> list[LocalFunction]:
    """Every container actor of the templates; `scaling(family)` gives its (min, max, messages per task)."""
    definitions = list(_consumer_definitions(synthesized))
    if not definitions:
        return []
    ecs, roles = client("ecs"), _role_names(client("cloudformation"))
    found = []
    for properties in definitions:
        family = properties["Family"]
        described = ecs.describe_task_definition(taskDefinition=family)["taskDefinition"]
        container = described["containerDefinitions"][0]
        environment = {item["name"]: item["value"] for item in container.get("environment", [])}
        role_id = properties["TaskRoleArn"]["Fn::GetAtt"][0]
        low, high, per_task = scaling(family)
        found.append(
            LocalFunction(
                name=family,
                handler=CONSUMER,
                role=f"arn:aws:iam::{ACCOUNT}:role/{roles[role_id]}",
                environment=environment,
                timeout=variables.HOP_TIME_LIMIT.read(environment),
                memory=int(described.get("memory") or container.get("memory") or 2048),
                code_dir=image_dir(synthesized, properties["ContainerDefinitions"][0]["Image"]) / "task",
                trigger=ContainerTrigger(environment[variables.QUEUE_URL.name], low, high, per_task),
            )
        )
    return sorted(found, key=lambda actor: actor.name)


def _consumer_definitions(synthesized: Synthesized) -> Iterator[dict[str, Any]]:
    for template in synthesized.templates:
        for resource in template["Resources"].values():
            if resource["Type"] != TASK_DEFINITION:
                continue
            properties = resource["Properties"]
            names = {
                item.get("Name")
                for c in properties.get("ContainerDefinitions", [])
                for item in c.get("Environment", [])
            }
            if variables.QUEUE_URL.name in names:
                yield properties


def _role_names(cloudformation: Any) -> dict[str, str]:
    """Every IAM role the stacks (nested ones included) made: logical id → role name."""
    names = {}
    for stack in cloudformation.describe_stacks()["Stacks"]:
        for resource in cloudformation.describe_stack_resources(StackName=stack["StackName"])["StackResources"]:
            if resource.get("ResourceType") == "AWS::IAM::Role":
                names[resource["LogicalResourceId"]] = resource["PhysicalResourceId"]
    return names


def container_scaling(mesh: LoadedMesh, family: str) -> tuple[int, int, int]:
    """(min, max, messages per task) of the actor whose resource name is `family`, from its `container`
    settings; the defaults of docs/mesh.md where it has none."""
    for name, actor in mesh.config.actors.items():
        if resource_name(mesh.config.namespace, name) == family:
            settings = getattr(actor, "container", None)
            if settings is not None:
                return int(settings.min), int(settings.max), int(settings.messages_per_task)
    return 0, DEFAULT_MAX, DEFAULT_PER_TASK
