"""How a mesh is spread over CloudFormation stacks, decided before anything is synthesized.

CloudFormation takes at most 500 resources and a 1 MB template (uploaded through S3) per stack.
A Lambda actor costs 7 resources, a Spark actor 21, a container actor 13 (21 on GPUs: counted so),
and the mesh's own part (bucket, tables, crew, status gateway, dashboard, alarms) about 75, so one
stack holds some 45 Lambda actors or 14 Spark actors with room to spare, and a nested stack 57
Lambda or 19 Spark actors. A mesh whose
estimate stays within `STACK_BUDGET` is one stack, exactly as before; a larger one keeps its own
part in the main stack and puts its actors, in the order of the mesh file, into nested stacks
(`AWS::CloudFormation::Stack`) of at most `STACK_BUDGET` resources and `TEMPLATE_BUDGET_BYTES`
each. The budgets leave a fifth of each limit free, for
what an estimate cannot know in advance (a CDK upgrade adding a resource, long environments).

Only what splitting cannot fix is refused: the main stack itself outgrowing the budgets. Its
dashboard and function-error alarms grow with every actor (about 3.6 KB a Lambda actor, 8 KB a
Spark actor) and it holds one resource per nested stack, so some 200 Lambda actors (or 90 Spark
actors) are the most one mesh takes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from asya.names import mesh_prefix
from asya_cdk.queue_lists import queue_policies

if TYPE_CHECKING:
    from asya_cdk.actor_config import ActorConfig
    from asya_cdk.config import MeshConfig

RESOURCE_LIMIT = 500  # CloudFormation: resources in one stack
TEMPLATE_LIMIT_BYTES = 1_000_000  # CloudFormation: a template body uploaded through S3
STACK_BUDGET = 400  # what the plan puts in one stack at most
TEMPLATE_BUDGET_BYTES = 800_000

# Measured on synthesized templates (tests/cdk/test_stacks.py keeps these honest).
# bucket and policy, tables, crew, gateway and its cursor secret, the seal secret, dashboard, three mesh alarms,
# and the follow tickets' route on the API (two resources, its method, validator and the function's permission)
MESH_RESOURCES = 82
FLY_MESH_RESOURCES = 2  # FLY's Event API and its channel namespace, with `gateway.fly: channel` (the default)
FLY_MESH_BYTES = 2_500  # the two, their subscribe handler's code, and the gateway's grant on them
# once any actor runs on Spark: the batches table, and the applications' guard (its function, role, policy
# and logs, and CDK's provider framework: a function, a role and a policy)
SPARK_MESH_RESOURCES = 8
SPARK_MESH_BYTES = 6_500
JOINS_MESH_RESOURCES = 1  # the joins table, once any actor is a join
CONTAINER_MESH_RESOURCES = 1  # the mesh's ECS cluster, once any actor runs on Fargate
# x-backlog, once any actor runs in a container (`asya_cdk.container_backlog`): its function, role, policy,
# logs and asynchronous invocation settings, the schedule rule and its permission to invoke the function
BACKLOG_RESOURCES = 7
BACKLOG_BYTES = 5_500
STATE_MESH_RESOURCES = 3  # the actor state table, and the state bucket with its policy, once any actor has state
JOB_IMAGE_RESOURCES = 4  # the job images' repository, and the copy function with its role and policy
JOB_IMAGE_COPY_RESOURCES = 1  # one copy per release and architecture built
JOB_IMAGE_BYTES = 6_000
LAYER_RESOURCES = 1  # a sidecar layer for each architecture beyond the first
STACK_OVERHEAD_RESOURCES = 1  # CDK's metadata resource, where the CDK CLI adds it
# a Lambda actor: queue and policy, function, role, policy, logs, mapping; a Spark actor more; a container actor:
# queue and policy, task definition, two roles and their policies, logs, service, scaling target, two policies
# and two alarms (13), and on GPUs its cluster, launch template, instance role and profile, group, capacity
# provider and its association (21)
ACTOR_RESOURCES = {"lambda": 7, "spark": 21, "container": 21}
FUNCTIONS_PER_ACTOR = {"lambda": 1, "spark": 2, "container": 0}  # a Spark actor's collector is a function too
MESH_FUNCTIONS = 7  # the crew's four and the gateway's three
FUNCTIONS_PER_ERROR_ALARM = 10  # CloudWatch: metrics in one alarm's math expression
# Template bytes as CDK writes them (indented JSON), measured, rounded up by a tenth; each taggable
# resource carries the `asya:version` tag (about 100 bytes: a Lambda actor has 6, a Spark actor 13).
MESH_BYTES = 100_000
# in a nested stack, whose references are parameters; a role on the tasks table lists the hop's attributes
# (`asya.task_attributes`): a Spark actor has two; a Lambda actor's role also publishes its FLY events; a
# container actor counted on GPUs, traced (its task role's X-Ray grant), setting its tasks' scale-in
# protection
ACTOR_BYTES = {"lambda": 8_800, "spark": 34_900, "container": 28_400}
DASHBOARD_BYTES = {"lambda": 3_600, "spark": 8_000, "container": 3_600}  # what an actor adds to the main stack
NESTED_STACK_BYTES = 2_000  # a nested stack's resource in the main stack, with its parameters
NESTED_TEMPLATE_BYTES = 1_000  # a nested template's own parameters
# Spark: the dispatcher, the collector and the job's copy
ENVIRONMENT_COPIES = {"lambda": 1, "spark": 3, "container": 1}


@dataclass(frozen=True)
class StackShare:
    """One stack of the plan: which actors it holds, and its estimated size."""

    name: str
    actors: tuple[str, ...]
    resources: int
    template_bytes: int


@dataclass(frozen=True)
class StackPlan:
    """`main` is the stack `cdk deploy` names; `nested` are the actor groups inside it (none for a
    mesh that fits one stack)."""

    main: StackShare
    nested: tuple[StackShare, ...]

    @property
    def split(self) -> bool:
        return bool(self.nested)

    def group_of(self, actor: str) -> int | None:
        """The index of the nested stack that holds `actor`; None if it is in the main stack."""
        return next((index for index, share in enumerate(self.nested) if actor in share.actors), None)

    def describe(self) -> list[str]:
        """One line per stack, for `asya check`."""
        lines = [_line(self.main, "stack")]
        lines += [_line(share, "nested stack") for share in self.nested]
        return lines


def _line(share: StackShare, kind: str) -> str:
    actors = f"{len(share.actors)} actor(s)" if share.actors else "no actors"
    return (
        f"{kind} {share.name}: {actors}, ~{share.resources} of {RESOURCE_LIMIT} resources, "
        f"~{share.template_bytes // 1000} of {TEMPLATE_LIMIT_BYTES // 1000} KB"
    )


class StackPlanError(ValueError):
    """The mesh cannot be deployed even split; the message names the field to change."""


def plan_stacks(config: MeshConfig, *, budget: int = STACK_BUDGET) -> StackPlan:
    """Spread the mesh's actors over stacks of at most `budget` resources each (a smaller budget
    splits smaller meshes too, which is how tests exercise the split); raises `StackPlanError` if
    the main stack itself would not fit."""
    if not 0 < budget <= STACK_BUDGET:
        raise ValueError(f"a stack budget is between 1 and {STACK_BUDGET} resources, not {budget}")
    name = mesh_prefix(config.namespace)
    actors = config.actors
    main_resources = _mesh_resources(config)
    main_bytes = (
        MESH_BYTES
        + sum(DASHBOARD_BYTES[a.runtime] for a in actors.values())
        + (JOB_IMAGE_BYTES if config.built_job_images() else 0)
        + (SPARK_MESH_BYTES if any(a.runtime == "spark" for a in actors.values()) else 0)
        + (FLY_MESH_BYTES if config.gateway.fly == "channel" else 0)
        + (BACKLOG_BYTES if any(a.runtime == "container" for a in actors.values()) else 0)
    )
    total = main_resources + sum(ACTOR_RESOURCES[a.runtime] for a in actors.values())
    total_bytes = main_bytes + sum(_actor_bytes(a) for a in actors.values())
    if total <= budget and total_bytes <= TEMPLATE_BUDGET_BYTES:
        return StackPlan(StackShare(name, tuple(actors), total, total_bytes), ())
    groups: list[list[str]] = []
    sizes: list[tuple[int, int]] = []
    for actor, settings in actors.items():
        cost, size = ACTOR_RESOURCES[settings.runtime], _actor_bytes(settings)
        if groups:
            resources, template_bytes = sizes[-1]
            if resources + cost <= budget and template_bytes + size <= TEMPLATE_BUDGET_BYTES:
                groups[-1].append(actor)
                sizes[-1] = (resources + cost, template_bytes + size)
                continue
        groups.append([actor])
        sizes.append((STACK_OVERHEAD_RESOURCES + cost, NESTED_TEMPLATE_BYTES + size))
    nested = tuple(
        StackShare(f"Actors{index + 1}", tuple(group), resources, template_bytes)
        for index, (group, (resources, template_bytes)) in enumerate(zip(groups, sizes, strict=True))
    )
    main = StackShare(name, (), main_resources + len(nested), main_bytes + NESTED_STACK_BYTES * len(nested))
    if main.resources > STACK_BUDGET or main.template_bytes > TEMPLATE_BUDGET_BYTES:
        raise StackPlanError(
            f"actors: {len(actors)} actors need ~{main.resources} resources and ~{main.template_bytes // 1000} KB "
            f"in the main stack alone (its dashboard, alarms and {len(nested)} nested stacks), over the "
            f"{STACK_BUDGET} resources and {TEMPLATE_BUDGET_BYTES // 1000} KB a stack is planned with; "
            "split the actors over several meshes (namespaces)"
        )
    return StackPlan(main, nested)


def _mesh_resources(config: MeshConfig) -> int:
    """The main stack's own resources, whatever the split: the mesh's part, a layer per extra
    architecture, an alarm per ten functions, and the managed policies that grant its queues."""
    actors = config.actors.values()
    containers = any(a.runtime == "container" for a in actors)
    functions = MESH_FUNCTIONS + sum(FUNCTIONS_PER_ACTOR[a.runtime] for a in actors) + (1 if containers else 0)
    architectures = {"arm64", *(a.architecture for a in actors)}  # the crew runs on arm64
    images = config.built_job_images()
    return (
        STACK_OVERHEAD_RESOURCES
        + MESH_RESOURCES
        + (FLY_MESH_RESOURCES if config.gateway.fly == "channel" else 0)
        + (SPARK_MESH_RESOURCES if any(a.runtime == "spark" for a in actors) else 0)
        + (JOINS_MESH_RESOURCES if any(a.join is not None for a in actors) else 0)
        + (CONTAINER_MESH_RESOURCES if any(a.container is not None and not a.container.gpu for a in actors) else 0)
        + (BACKLOG_RESOURCES if containers else 0)
        + (STATE_MESH_RESOURCES if any(a.state is not None for a in actors) else 0)
        + ((JOB_IMAGE_RESOURCES + JOB_IMAGE_COPY_RESOURCES * len(images)) if images else 0)
        + LAYER_RESOURCES * (len(architectures) - 1)
        + math.ceil(functions / FUNCTIONS_PER_ERROR_ALARM)
        + queue_policies(config.actors)
    )


def _actor_bytes(settings: ActorConfig) -> int:
    """An actor's share of a template: its resources, and its own variables and resiliency as many
    times as its functions and job carry them."""
    own = len(json.dumps(settings.environment)) + len(settings.resiliency.model_dump_json(exclude_defaults=True))
    return ACTOR_BYTES[settings.runtime] + ENVIRONMENT_COPIES[settings.runtime] * own
