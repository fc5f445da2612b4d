"""The console of a mesh deployed on AWS, reached with the caller's AWS credentials (boto3's chain: a
profile, SSO, a role): the gateway's calls are signed with SigV4 by the console's server, so the
browser holds no AWS key and the gateway's IAM auth stays on.

The mesh is read from what was deployed, not from a mesh file: the stack's resources (its nested
stacks' too) name the actors' queues and a Spark actor's collector; a join is told by its function's
`ASYA_JOIN`; the gateway lists the flows with their routes and programs (`GET /api/v1/flows`). Stats come from
SQS, CloudWatch and the Spark batches table (`asya_local.console.stats.AwsStats`).

What the caller needs besides invoking the gateway: `cloudformation:ListStackResources` and
`DescribeStacks`, `lambda:GetFunctionConfiguration` on the mesh's functions (once, at start),
`sqs:ListQueues` and `GetQueueAttributes`, `ecs:DescribeServices` on the container actors'
services if there are any, `cloudwatch:GetMetricData` (once a minute while a page is
open, and once per actor page viewed, kept a minute: `asya_local.console.aws_history`),
`dynamodb:Query` on the Spark batches table's `open` index (its ARN ends `/index/open`) if there
is one; for a task's log lines, `logs:StartQuery` on the mesh's functions' log groups and
`logs:GetQueryResults` (one query per task page viewed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from asya.joins import JoinPolicy
from asya.names import CREW, GATEWAY_STREAM_DEAD_LETTERS, SUMP_DEAD_LETTERS, collector_name, resource_name
from asya.variables import JOIN
from asya_local.console.app import Console
from asya_local.console.aws_history import AwsHistory
from asya_local.console.stats import AwsStats
from asya_local.console.task_logs import CloudWatchTaskLogs
from asya_local.console.topology import Node, Topology
from asya_local.container_counts import service_places
from asya_local.discovery import DeployedMesh

AWS_REFRESH_SECONDS = 5.0
NESTED_STACK = "AWS::CloudFormation::Stack"
LOG_GROUP = "AWS::Logs::LogGroup"  # one per function of the mesh: where a task's log lines are searched
NOT_ACTORS = (*CREW, SUMP_DEAD_LETTERS, GATEWAY_STREAM_DEAD_LETTERS)


def deployed_console(mesh: DeployedMesh) -> Console:
    """The console of `mesh` (found by `asya_local.discovery.discover`), reading AWS with its clients."""
    resources = list(stack_resources(mesh.client("cloudformation"), mesh.stack))
    routes, programs = listed_flows(mesh.gateway.listed_flows())
    places = service_places(mesh.outputs)
    topology = stack_topology(
        mesh.namespace, resources, mesh.client("lambda"), routes, programs, containers=set(places)
    )
    spark = [node.name for node in topology.nodes if node.kind == "spark"]
    stats = AwsStats(
        mesh,  # `client(name)`, as a boto3 session gives
        mesh.namespace,
        actors=topology.actors,
        spark_actors=spark,
        batches_table=mesh.outputs.get("SparkBatchesTable"),
        places=places,
    )
    log_groups = sorted(
        str(resource["PhysicalResourceId"])
        for resource in resources
        if resource.get("ResourceType") == LOG_GROUP and resource.get("PhysicalResourceId")
    )
    task_logs = CloudWatchTaskLogs(mesh.client("logs"), log_groups)
    history = AwsHistory(mesh.client("cloudwatch"), mesh.namespace, spark_actors=spark)
    return Console(
        topology, stats, mesh.gateway, mesh.where, refresh=AWS_REFRESH_SECONDS, history=history, task_logs=task_logs
    )


def listed_flows(listed: dict[str, dict[str, Any]]) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """The flows as `GET /flows` lists them: each flow's route, and each program flow's program."""
    routes = {name: list(flow["route"]) for name, flow in listed.items()}
    return routes, {name: flow["program"] for name, flow in listed.items() if flow.get("program")}


def stack_resources(cloudformation: Any, stack: str) -> Iterator[dict[str, Any]]:
    """Every resource of the stack and of its nested stacks (`ListStackResources`, paginated)."""
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("ResourceType") == NESTED_STACK and resource.get("PhysicalResourceId"):
                yield from stack_resources(cloudformation, resource["PhysicalResourceId"])
            else:
                yield resource


def stack_topology(
    namespace: str,
    resources: list[dict[str, Any]],
    functions: Any,
    flows: dict[str, list[str]],
    programs: dict[str, dict[str, Any]] | None = None,
    *,
    containers: set[str] | None = None,
) -> Topology:
    """The actors are the namespace's queues but the crew's and the dead-letter queues; one whose
    collector function exists is a Spark actor; one of `containers` (the stack's `ContainerServices`)
    a container actor, which has no function; one whose function says `ASYA_JOIN` is a join.
    `flows`: each flow's route; `programs`: each program flow's program."""
    prefix = resource_name(namespace, "")
    queues = [
        str(resource["PhysicalResourceId"]).rsplit("/", 1)[-1]
        for resource in resources
        if resource.get("ResourceType") == "AWS::SQS::Queue"
    ]
    names = [queue.removeprefix(prefix) for queue in queues if queue.startswith(prefix)]
    actors = [name for name in names if name not in NOT_ACTORS]
    deployed = {
        str(resource["PhysicalResourceId"])
        for resource in resources
        if resource.get("ResourceType") == "AWS::Lambda::Function"
    }
    nodes = []
    for actor in sorted(actors, key=lambda name: _first_seen(name, flows)):
        if collector_name(namespace, actor) in deployed:
            nodes.append(Node(actor, "spark"))
            continue
        if actor in (containers or set()):
            nodes.append(Node(actor, "container"))
            continue
        variables = functions.get_function_configuration(FunctionName=resource_name(namespace, actor))
        join = variables.get("Environment", {}).get("Variables", {}).get(JOIN.name)
        nodes.append(Node(actor, "lambda", JoinPolicy.of(json.loads(join)).describe() if join else None))
    return Topology.of(namespace, nodes, flows, programs)


def _first_seen(actor: str, flows: dict[str, list[str]]) -> tuple[int, int, str]:
    """Actors in the order the flows name them (as a mesh file lists them, usually), the rest by name."""
    for index, route in enumerate(flows.values()):
        if actor in route:
            return (index, route.index(actor), actor)
    return (len(flows), 0, actor)
