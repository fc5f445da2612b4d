"""`AsyaMesh`: the mesh as one construct a team adds to a CDK app of its own.

A team that already has a stack (its VPC, buckets, tables) adds a mesh to it the way it adds any L2
construct: props checked before synthesis, each problem naming its field, and attributes and grant
methods to wire the mesh to what the stack already holds. `MeshStack` is built on this same construct,
so a mesh deployed on its own and a mesh inside a team's stack are the same resources.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya import __version__
from asya.names import VERSION_TAG
from asya_cdk.actor import ActorFunction
from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError, load_mesh, mesh_from_config
from asya_cdk.mesh import Mesh
from asya_cdk.plan import STACK_BUDGET, plan_stacks


class AsyaMeshError(ValueError):
    """A prop or an argument of `AsyaMesh` is wrong; the message names it."""


@dataclass(frozen=True)
class MeshActor:
    """One actor of the mesh as its neighbours see it: what to send to, what runs, and with which role."""

    name: str
    queue: sqs.IQueue
    """Where its envelopes arrive (`asya-<namespace>-<name>`): a producer or an event source targets it."""
    function: lambda_.IFunction | None
    """The Lambda function that runs the handler behind the sidecar: alarms and traces hang on it. None
    for a container actor, whose handler runs in ECS tasks (`asya_cdk.container`)."""
    role: iam.IRole
    """The function's role, or a container actor's task role: grant it what the handler reads or writes in
    the team's own resources."""

    def grant_send(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` put envelopes on this actor's queue: SendMessage only, plus the key's use if the
        queue is encrypted with a customer key. An envelope sent here must name this actor as `curr`
        (docs/spec/envelope.md), or the sidecar sends it to x-sump."""
        grant = self.queue.grant(grantee, "sqs:SendMessage")  # not the queue's attributes or URL: a name is enough
        key = self.queue.encryption_master_key
        if key is not None:  # a customer key: sending encrypts with it (today's queues use SQS-managed keys)
            key.grant(grantee, "kms:GenerateDataKey", "kms:Decrypt")
        return grant


def resolve_mesh(
    mesh_file: str | Path | None,
    config: MeshConfig | LoadedMesh | dict[str, Any] | None,
    base_dir: str | Path | None,
) -> LoadedMesh:
    """The props' mesh: exactly one of a mesh file or a config object, checked like `load_mesh` checks a
    file, so a wrong prop fails before synthesis with the field it is about."""
    if (mesh_file is None) == (config is None):
        raise AsyaMeshError(
            "AsyaMesh: give exactly one of mesh_file (a path) or config "
            "(a MeshConfig, a mapping of its shape, or a LoadedMesh)"
        )
    if isinstance(config, LoadedMesh):
        return config
    try:
        if config is not None:
            return mesh_from_config(config, base_dir if base_dir is not None else Path.cwd())
        assert mesh_file is not None
        if not Path(mesh_file).is_file():
            raise AsyaMeshError(f"AsyaMesh: mesh_file {str(mesh_file)!r} is not a file")
        return load_mesh(mesh_file)
    except MeshConfigError as exc:
        raise AsyaMeshError(f"AsyaMesh: {exc}") from None


class AsyaMesh(Mesh):
    """A whole mesh (every actor's queue and function, the crew, the results bucket, the task tables,
    the status gateway, the dashboard) in the team's own stack.

    Props: `mesh_file`, the path of a mesh file, or `config`, a `MeshConfig` or a mapping of its shape
    (its relative code paths start at `base_dir`, the working folder unless given) or an already
    loaded `LoadedMesh`;
    `stack_budget` is the most resources put in the enclosing stack before actors move into nested
    stacks. Attributes: `actor(name)`, `tasks_table`, `results_bucket`, `api`, `url`; grants:
    `grant_send(grantee, flow=...)` and `actor(name).grant_send(grantee)`.

    Every resource it makes is tagged `asya:version` with the release that built it, nested stacks
    included: a mesh in a team's own stack records its version as one deployed by `asya deploy` does."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        mesh_file: str | Path | None = None,
        config: MeshConfig | LoadedMesh | dict[str, Any] | None = None,
        base_dir: str | Path | None = None,
        stack_budget: int = STACK_BUDGET,
    ) -> None:
        loaded = resolve_mesh(mesh_file, config, base_dir)
        super().__init__(scope, construct_id, loaded, plan=plan_stacks(loaded.config, budget=stack_budget))
        cdk.Tags.of(self).add(VERSION_TAG, __version__)

    @property
    def tasks_table(self) -> dynamodb.ITable:
        """The task records the gateway serves (one per task, its status and progress): a team's own
        reader (a report, a stream consumer) is granted reads on it."""
        return self.task_tables.tasks

    @property
    def results_bucket(self) -> s3.IBucket:
        """Where x-sink and x-sump write each task's result or failure under `results/<namespace>/`: a
        team's consumer of results is granted reads on it (or gets its object-created events)."""
        return self.bucket

    @property
    def api(self) -> apigateway.RestApi | apigatewayv2.HttpApi:
        """The status gateway's API (REST or HTTP, as the mesh file's `gateway.api` says): a team puts
        it behind its own domain or WAF through this."""
        return self.gateway.api

    @property
    def url(self) -> str:
        """The gateway's base URL (REST under api/v1/, MCP at mcp, health at health), for the team's
        outputs or its callers' configuration."""
        return self.gateway.url

    def actor(self, name: str) -> MeshActor:
        """An actor of the mesh file, or of the crew (`x-sink`, `x-sump`, ...), by name; an unknown name
        is an `AsyaMeshError` listing the actors there are, since a typo here would wire nothing."""
        found = self.actors.get(name)
        if found is None:
            raise AsyaMeshError(
                f"AsyaMesh.actor: no actor {name!r} in mesh {self.namespace!r} (actors: {', '.join(self.actors)})"
            )
        function = found.function if isinstance(found, ActorFunction) else None
        return MeshActor(name=name, queue=found.queue, function=function, role=found.role)

    def flow_entry(self, flow: str) -> MeshActor:
        """The actor a flow's tasks start at (a route's first actor, a program's first step): where an
        envelope that starts the flow is sent."""
        flows = self.mesh.config.flows
        if flow not in flows:
            raise AsyaMeshError(
                f"AsyaMesh: no flow {flow!r} in mesh {self.namespace!r} (flows: {', '.join(flows) or 'none'})"
            )
        return self.actor(self.mesh.flow_route(flow)[0])

    def grant_send(self, grantee: iam.IGrantable, *, flow: str) -> iam.Grant:
        """Let a producer of the team's (a role, a function) inject envelopes that start `flow`: SendMessage
        on the flow's first actor's queue and nothing else (with the key's use where the queue has a
        customer key; the mesh's queues use SQS-managed keys, which need no grant)."""
        return self.flow_entry(flow).grant_send(grantee)
