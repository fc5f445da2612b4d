"""The mesh config: one YAML file that defines a namespace, its actors and its flows.

It is read by the CDK app and by the local stack alike, so both build the same mesh. Validation is
strict: unknown fields are errors, and every error names the file, the field and what is wrong.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, model_validator

from asya.names import PAUSE, RESERVED, ROUTED_CREW, mesh_own, resource_name, routable
from asya.transport import SQS_QUEUE_NAME_MAX
from asya_cdk.actor_config import NAME, ActorConfig, StrictModel
from asya_cdk.flow_config import FlowConfig
from asya_cdk.gateway_config import GatewayConfig

REFERENCES_APART = "references apart"  # validation context: `reference_problems` is asked for by the caller
# The mesh file's format (`version:`; a file without one is version 1). A newer asya-aws reads every
# older version, and the CHANGELOG says what changed when this number does; an older one refuses a newer
# file (`asya_cdk.loading`) rather than misread fields it does not know.
MESH_VERSION = 1
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"  # what pydantic's schemas are written in


class SinkHook(StrictModel):
    """x-sink sends a copy of each terminal envelope in one of `phases` to `actor`."""

    actor: Annotated[str, Field(pattern=NAME)]
    phases: list[Literal["succeeded", "failed", "canceled"]] = Field(default=["succeeded", "failed"])


class ResultsConfig(StrictModel):
    """Where x-sink keeps results: a final result whose payload is at most `inline_max_bytes` of JSON
    goes into the task record with the final status (no S3 request), a larger one to the bucket.
    The default stays under what an S3 PUT costs in DynamoDB write units (docs/cost.md); 0 keeps
    every result in S3. Both live `retention_days`."""

    retention_days: int = Field(default=90, ge=1)
    inline_max_bytes: int = Field(default=4096, ge=0, le=16_384)

    @property
    def retention_seconds(self) -> int:
        return self.retention_days * 86_400


class PayloadsConfig(StrictModel):
    """Large payloads: an envelope over `claim_check_bytes` travels with its payload in the mesh's bucket
    and a reference in the message (`asya.claims`, docs/routing.md). SQS bills each 64 KiB of a message
    as a request when it is sent and when it is received; at 448 KiB (the default) those seven chunks
    cost what an S3 PUT and GET do, so above it the claim check is the cheaper way. The slim envelope
    left must still fit SQS's 1 MiB."""

    claim_check_bytes: int = Field(default=458_752, ge=1024, le=786_432)


class StatusConfig(StrictModel):
    """How often actors write task status: `coalesced` (the default) keeps one write per hop, because
    every write is a paid DynamoDB request; `every-point` writes received, processing and completed."""

    writes: Literal["coalesced", "every-point"] = "coalesced"


class LocalConfig(StrictModel):
    """What only the local stack reads (`cdk deploy` ignores it): stand-ins for what a real account
    already has. `secrets_file`: a YAML file of secret values by name (default `.asya/secrets.yaml`
    beside the mesh file; keep real values out of git); `buckets`: buckets of the user's that actors
    read, each created on the local endpoint and filled with a folder's files (bucket → folder)."""

    secrets_file: str | None = None
    buckets: dict[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")], str] = Field(
        default_factory=dict
    )


class MeshConfig(StrictModel):
    """An asya-aws mesh file: a namespace, its actors, its flows and the mesh-wide settings
    (docs/mesh.md)."""

    version: int = Field(default=1, ge=1, le=MESH_VERSION)
    namespace: Annotated[str, Field(pattern=NAME, max_length=40)]
    actors: dict[str, ActorConfig] = Field(min_length=1)
    flows: dict[Annotated[str, Field(pattern=NAME)], FlowConfig] = Field(default_factory=dict)
    sink_hooks: list[SinkHook] = Field(default_factory=list)
    results: ResultsConfig = Field(default_factory=ResultsConfig)
    payloads: PayloadsConfig = Field(default_factory=PayloadsConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    status: StatusConfig = Field(default_factory=StatusConfig)
    alarm_topic_arn: str | None = None
    # one switch for a task's whole trace: every actor's `tracing`, the crew's and `gateway.tracing`
    tracing: bool = False
    local: LocalConfig = Field(default_factory=LocalConfig)

    @model_validator(mode="before")
    @classmethod
    def _traced_throughout(cls, data: Any) -> Any:
        """`tracing: true` turns tracing on where a task's hops run: each actor and the gateway read as if
        they said so (the crew reads the mesh's own switch, `crew_environment`)."""
        if not isinstance(data, dict) or data.get("tracing") is not True:
            return data
        traced = dict(data)
        actors = data.get("actors")
        if isinstance(actors, dict):
            traced["actors"] = {
                name: {**a, "tracing": True} if isinstance(a, dict) else a for name, a in actors.items()
            }
        gateway = data.get("gateway") or {}
        if isinstance(gateway, dict):
            traced["gateway"] = {**gateway, "tracing": True}
        return traced

    @model_validator(mode="after")
    def _references_resolve(self, info: ValidationInfo) -> MeshConfig:
        """Every name the mesh uses resolves; `load_mesh` asks for these problems apart
        (`REFERENCES_APART`), to report them with the others in one run."""
        problems = [] if (info.context or {}).get(REFERENCES_APART) else self.reference_problems()
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def reference_problems(self) -> list[str]:
        """`<field>: <what is wrong>` for every name that does not resolve: actors, the actors routes,
        policies and sink hooks name, and the branches each join gathers."""
        return self._name_problems() + self._route_problems() + self._join_problems()

    def _name_problems(self) -> list[str]:
        problems = []
        for name in self.actors:
            if not re.match(NAME, name) or name in RESERVED or mesh_own(name):
                problems.append(
                    f"actors.{name}: actor names are lowercase letters, digits and '-', "
                    f"not starting with 'x-' (the mesh's own: {', '.join(RESERVED)})"
                )
            elif len(resource_name(self.namespace, name)) > SQS_QUEUE_NAME_MAX:
                problems.append(
                    f"actors.{name}: queue name {resource_name(self.namespace, name)} exceeds "
                    f"{SQS_QUEUE_NAME_MAX} characters"
                )
        for name, settings in self.actors.items():
            for policy_name, policy in settings.resiliency.policies.items():
                for target in policy.on_exhausted:
                    if target not in self.actors:
                        where = f"actors.{name}.resiliency.policies.{policy_name}.on_exhausted"
                        problems.append(f"{where}: unknown actor {target!r}")
        for index, hook in enumerate(self.sink_hooks):
            if hook.actor not in self.actors:
                problems.append(f"sink_hooks[{index}].actor: unknown actor {hook.actor!r}")
        return problems

    def _route_problems(self) -> list[str]:
        problems = []
        for flow_name, flow in self.flows.items():
            for index, actor in enumerate(flow.route):
                where = f"flows.{flow_name}.route[{index}]"
                if not routable(actor):
                    problems.append(
                        f"{where}: {actor} cannot be in a route; of the crew only {PAUSE} can "
                        f"(x-sink and x-sump end every route by themselves, x-resume is started by the gateway)"
                    )
                elif actor not in self.routed:
                    problems.append(f"{where}: unknown actor {actor!r}")
        return problems

    @property
    def routed(self) -> tuple[str, ...]:
        """What a route in this mesh may name: its actors and the crew's `ROUTED_CREW` (x-pause); what
        the gateway accepts in a task's route, as each of them has a queue."""
        return (*self.actors, *ROUTED_CREW)

    def _join_problems(self) -> list[str]:
        """A join gathers the branches of actors of this mesh, and in every flow that visits it one of
        them comes first: otherwise nothing is ever gathered there."""
        problems = []
        for name, settings in self.actors.items():
            if settings.join is None:
                continue
            for index, source in enumerate(settings.join.branches_of):
                where = f"actors.{name}.join.branches_of[{index}]"
                if source not in self.actors:
                    problems.append(f"{where}: unknown actor {source!r}")
                elif source == name:
                    problems.append(f"{where}: a join cannot gather its own branches")
            for flow_name, flow in self.flows.items():
                if name in flow.route and not set(flow.route[: flow.route.index(name)]) & set(
                    settings.join.branches_of
                ):
                    problems.append(
                        f"flows.{flow_name}.route[{flow.route.index(name)}]: {name} joins the branches of "
                        f"{', '.join(settings.join.branches_of)} (actors.{name}.join.branches_of), but none "
                        "comes before it in this route"
                    )
        return problems

    def joins_of(self, actor: str) -> list[str]:
        """The join actors that gather `actor`'s branches (`ASYA_JOINED_BY`)."""
        return [
            name for name, other in self.actors.items() if other.join is not None and actor in other.join.branches_of
        ]

    def built_job_images(self) -> set[tuple[str, str]]:
        """The Spark job images the stack builds, as (release, architecture): one for each pair that a
        Spark actor without an image of its own (`spark.image_uri`) runs on."""
        return {
            (actor.spark.release, actor.architecture)
            for actor in self.actors.values()
            if actor.runtime == "spark" and actor.spark is not None and not actor.spark.image_uri
        }

    def joins(self) -> dict[str, list[str]]:
        """Each join actor and the actors whose branches it gathers."""
        return {name: list(actor.join.branches_of) for name, actor in self.actors.items() if actor.join is not None}


def mesh_schema() -> dict[str, Any]:
    """The mesh file's JSON Schema (`asya schema`), made from the model that validates the file, so an
    editor checks a file as `asya check` does, short of what the schema cannot say (names that resolve,
    paths on disk, AWS's quotas)."""
    schema = _json_bounds(MeshConfig.model_json_schema())
    return {"$schema": JSON_SCHEMA_DIALECT, **schema, "title": f"asya-aws mesh file, version {MESH_VERSION}"}


# pydantic leaves the bounds of a field written otherwise than its value (a duration: seconds or `30s`)
# under their Python names; under JSON Schema's they hold for the numbers alone, as the model's do
_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def _json_bounds(node: Any) -> Any:
    if isinstance(node, list):
        return [_json_bounds(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        _BOUNDS.get(key, key) if isinstance(value, int | float) else key: _json_bounds(value)
        for key, value in node.items()
    }
