"""The mesh config: one YAML file that defines a namespace, its actors and its flows.

It is read by the CDK app and by the local stack alike, so both build the same mesh. Validation is
strict: unknown fields are errors, and every error names the file, the field and what is wrong.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from asya.flow_program import Program
from asya.names import CREW, PAUSE, RESERVED, ROUTED_CREW, SUMP, mesh_own, resource_name, routable
from asya.resiliency import Seconds
from asya.startup import FileKind, FileSource, encode_files, encode_secrets
from asya.transport import SQS_QUEUE_NAME_MAX
from asya.variables import (
    ACTOR,
    ACTOR_TIMEOUT,
    CLAIM_BUCKET,
    CLAIM_CHECK_BYTES,
    EVENTS_TABLE,
    FILES,
    HANDLER,
    HANDLER_MODE,
    IDEMPOTENCY_TABLE,
    JOIN,
    JOIN_MAX_WIDTH,
    JOINED_BY,
    JOINS_TABLE,
    NAMESPACE,
    RESILIENCY,
    SECRETS,
    STATUS_WRITES,
    TASK_TTL,
    TASKS_TABLE,
    TRACING,
)
from asya_cdk.actor_config import CREW_SETTINGS, NAME, SYSTEM_LOG_LEVEL, ActorConfig, StrictModel, SystemLogLevel
from asya_cdk.libraries import Requirements
from asya_cdk.needs import (
    LAMBDA_EPHEMERAL_STORAGE_MB,
    TMP_SPARE_MB,
    s3_location,
)

REFERENCES_APART = "references apart"  # validation context: `reference_problems` is asked for by the caller
REQUIREMENTS_FILE = "requirements.txt"  # in an actor's code folder: its libraries, unless the mesh file lists them


class FlowConfig(StrictModel):
    """What a user starts, and what the gateway and MCP expose as a tool: a fixed `route`, or a
    `program`, a Python function of the mesh's code over the payload (`module.function`, from the mesh
    file's folder) compiled ahead of time into decisions the sidecars take (docs/flows.md)."""

    route: list[Annotated[str, Field(pattern=NAME)]] = Field(default_factory=list)
    program: str | None = Field(default=None, pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
    description: str = ""
    timeout: Seconds | None = Field(default=None, gt=0)
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})

    @model_validator(mode="after")
    def _route_or_program(self) -> FlowConfig:
        if bool(self.route) == bool(self.program):
            raise ValueError("give a flow either a route (a list of actors) or a program (module.function)")
        return self

    @field_validator("input_schema")
    @classmethod
    def _schema_compiles_and_examples_match(cls, schema: dict[str, Any]) -> dict[str, Any]:
        """The gateway compiles the schema at its first request and `asya smoke` sends the schema's
        `examples`: a schema it cannot compile, or an example it would refuse, is a mistake in the file."""
        import fastjsonschema

        try:
            validate = fastjsonschema.compile(schema)
        except fastjsonschema.JsonSchemaDefinitionException as exc:
            raise ValueError(f"not a valid JSON Schema: {exc}") from None
        examples = schema.get("examples", [])
        if not isinstance(examples, list):
            raise ValueError("examples: a list of example payloads (JSON Schema's `examples` keyword)")
        for index, example in enumerate(examples):
            try:
                validate(example)
            except fastjsonschema.JsonSchemaValueException as exc:
                raise ValueError(f"examples[{index}] does not match the schema: {exc.message}") from None
        return schema


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


class JwtConfig(StrictModel):
    """Sign-in with an OpenID Connect provider (`gateway.auth: jwt`, docs/callers.md): the issuer whose
    tokens the gateway accepts and the audiences a token must name one of. `cognito: true` has the
    stack create a Cognito user pool and trust it instead of `issuer`."""

    issuer: Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$", max_length=512)] | None = None
    audiences: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(min_length=1, max_length=10)
    cognito: bool = False

    @model_validator(mode="after")
    def _one_issuer(self) -> JwtConfig:
        if (self.issuer is None) == (not self.cognito):
            raise ValueError("give exactly one of 'issuer' (an OIDC issuer's https URL) or 'cognito: true'")
        return self


COGNITO_ADMIN_SCOPE = "admin"  # the pool's resource server scope that makes an admin (`gateway.jwt.cognito`)


@dataclass(frozen=True)
class UserPoolNames:
    """The Cognito user pool a stack made for sign-in (`gateway.jwt.cognito`), as the gateway is told."""

    issuer: str
    client: str  # the app client's id
    admin_scope: str  # `<resource server>/<scope>`


class AdminsConfig(StrictModel):
    """Who sees every task of the namespace, not only its own (docs/callers.md): a signed-in caller whose
    token grants one of `scopes` (`scope`/`scp`) or one of `roles` (`cognito:groups`, `groups`, `roles`),
    or an AWS principal matching one of `principals` (ARNs, `*` allowed)."""

    scopes: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(default_factory=list)
    roles: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(default_factory=list)
    principals: list[Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:(iam|sts)::", max_length=512)]] = Field(
        default_factory=list
    )


class GatewayConfig(StrictModel):
    """The status gateway: who may call its API (`auth`), which kind of API fronts it (`api`: REST, or
    the cheaper HTTP API), who sees every task (`admins`), how long task records outlive their task,
    and how often the deadline backstop looks for overdue tasks."""

    auth: Literal["iam", "api_key", "jwt"] = "iam"
    api: Literal["rest", "http"] = "rest"
    jwt: JwtConfig | None = None
    admins: AdminsConfig = Field(default_factory=AdminsConfig)
    task_ttl_days: int = Field(default=7, ge=1)
    backstop_minutes: int = Field(default=1, ge=1, le=60)
    tracing: bool = False
    cloudwatch_role: bool = True
    system_log_level: SystemLogLevel = SYSTEM_LOG_LEVEL  # of its three functions (asya_cdk.actor_config)

    @model_validator(mode="after")
    def _auth_fits_api(self) -> GatewayConfig:
        if self.auth == "jwt" and self.jwt is None:
            raise ValueError("jwt: 'auth: jwt' needs a 'jwt' block: the issuer (or 'cognito: true') and audiences")
        if self.auth != "jwt" and self.jwt is not None:
            raise ValueError(f"jwt: set only with 'auth: jwt' (auth is {self.auth!r})")
        if self.api == "http" and self.auth == "api_key":
            raise ValueError(
                "auth: an HTTP API has no API keys or usage plans; with 'api: http' use 'auth: iam' or "
                "'auth: jwt', or keep 'api: rest' for API keys"
            )
        return self

    def auth_document(self, pool: UserPoolNames | None = None) -> dict[str, Any]:
        """`ASYA_GATEWAY_AUTH`: what the gateway function reads of who its callers are
        (`asya_gateway.callers.AuthSettings`). With `cognito: true`, `pool` is the user pool the stack
        made: its issuer is trusted, its app client is an audience (a Cognito access token names its
        client, not an audience) and its resource server's admin scope makes an admin."""
        admins = self.admins.model_dump()
        if self.jwt is None:
            return {"mode": self.auth, "admins": admins}
        jwt = self.jwt.model_dump(exclude_none=True)
        if self.jwt.cognito and pool is not None:
            jwt |= {"issuer": pool.issuer, "audiences": [pool.client, *self.jwt.audiences]}
            admins["scopes"] = [*admins["scopes"], pool.admin_scope]
        return {"mode": self.auth, "admins": admins, "jwt": jwt}

    @property
    def task_ttl_seconds(self) -> int:
        return self.task_ttl_days * 86_400


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
    namespace: Annotated[str, Field(pattern=NAME, max_length=40)]
    actors: dict[str, ActorConfig] = Field(min_length=1)
    flows: dict[Annotated[str, Field(pattern=NAME)], FlowConfig] = Field(default_factory=dict)
    sink_hooks: list[SinkHook] = Field(default_factory=list)
    results: ResultsConfig = Field(default_factory=ResultsConfig)
    payloads: PayloadsConfig = Field(default_factory=PayloadsConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    status: StatusConfig = Field(default_factory=StatusConfig)
    alarm_topic_arn: str | None = None
    local: LocalConfig = Field(default_factory=LocalConfig)

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


class LoadedMesh(BaseModel):
    """A validated mesh and the folder its relative code paths start from; `programs`: each program
    flow compiled (`asya_cdk.flow_compiler`), by flow name."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    config: MeshConfig
    base: Path
    programs: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def flow_route(self, name: str) -> list[str]:
        """A flow's route, or for a program the shortest way through it (what a task starts out on)."""
        program = self.programs.get(name)
        if program is None:
            return list(self.config.flows[name].route)
        return Program(program).shortest(int(program["start"]))

    def flows_json(self) -> str:
        """`ASYA_FLOWS`: `{flow: {route, description, timeout, input_schema}}`, compact to save bytes; a
        program's flow names its program's version (the program itself is in `ASYA_FLOW_PROGRAMS`)."""
        flows = {}
        for name, flow in self.config.flows.items():
            spec = flow.model_dump(mode="json", exclude={"program"})
            spec["route"] = self.flow_route(name)
            if name in self.programs:
                spec["program"] = self.programs[name]["version"]
            flows[name] = spec
        return json.dumps(flows, separators=(",", ":"), ensure_ascii=False)

    def programs_json(self) -> str:
        """The file of compiled programs the gateway starts tasks of program flows with."""
        return json.dumps(self.programs, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def code_dir(self, actor: str) -> Path:
        return (self.base / self.config.actors[actor].code).resolve()

    def local_file(self, path: str) -> Path:
        """A path the mesh file names (a file to ship, a folder to put in a bucket), from its folder."""
        return (self.base / path).resolve()

    def files_bytes(self, actor: str) -> int:
        """What the actor's local files take in /tmp at their peak: a file its size, a folder twice its
        size (its zip, then the folder unpacked beside it). `s3://` objects are not counted: their size
        is not known before they are read."""
        total = 0
        for given in self.config.actors[actor].files.values():
            path = self.local_file(given)
            if s3_location(given) is None and path.is_file():
                total += path.stat().st_size
            elif s3_location(given) is None:
                total += 2 * sum(file.stat().st_size for file in path.rglob("*") if file.is_file())
        return total

    def ephemeral_storage(self, actor: str) -> int | None:
        """/tmp's size in MB: as the actor sets it, or, when its files need more than Lambda's default
        leaves (with `TMP_SPARE_MB` to spare), enough for them; None keeps Lambda's default."""
        settings = self.config.actors[actor]
        if settings.ephemeral_storage is not None:
            return settings.ephemeral_storage
        needed = math.ceil(self.files_bytes(actor) / 2**20) + TMP_SPARE_MB
        return needed if needed > LAMBDA_EPHEMERAL_STORAGE_MB[0] else None

    def requirements(self, actor: str) -> Requirements:
        """The actor's libraries: its `requirements` list, or its code folder's requirements.txt."""
        settings = self.config.actors[actor]
        if settings.requirements is not None:
            return Requirements(tuple(settings.requirements), source=f"actors.{actor}.requirements")
        file = self.code_dir(actor) / REQUIREMENTS_FILE
        if file.is_file():
            return Requirements(files=(file,), source=f"actors.{actor} ({file})")
        return Requirements()

    def queue_name(self, actor: str) -> str:
        return resource_name(self.config.namespace, actor)

    def redriven_retention(self) -> dict[str, float]:
        """How long each queue that redrives into x-sump keeps messages, by the field that sets it."""
        crew = {f"{name} (crew)": CREW_SETTINGS.retention for name in CREW if name != SUMP}
        return {**{f"actors.{name}.retention": actor.retention for name, actor in self.config.actors.items()}, **crew}

    def file_sources(self, actor: str, asset_url: Callable[[str, Path], str]) -> dict[str, FileSource]:
        """Where each of the actor's files comes from at its start (`ASYA_FILES`): an `s3://` URL as the
        mesh file gives it, or a local file or folder shipped as an asset, whose URL `asset_url(variable,
        path)` gives (a folder's asset is a zip)."""
        sources = {}
        for variable, given in self.config.actors[actor].files.items():
            location = s3_location(given)
            if location is not None:
                bucket, key = location
                kind: FileKind = "prefix" if key.endswith("/") or not key else "file"
                name = key.rstrip("/").rsplit("/", 1)[-1] or bucket
                sources[variable] = FileSource(given, name, kind)
            else:
                path = self.local_file(given)
                sources[variable] = FileSource(asset_url(variable, path), path.name, "zip" if path.is_dir() else "file")
        return sources

    def actor_environment(
        self, actor: str, resources: dict[str, str], files: dict[str, FileSource] | None = None
    ) -> dict[str, str]:
        """The sidecar's variables for an actor's function; `resources` names the tables it may use,
        `files` where its files come from (`file_sources`)."""
        settings = self.config.actors[actor]
        variables = {
            **settings.environment,
            NAMESPACE.name: self.config.namespace,
            ACTOR.name: actor,
            HANDLER.name: settings.handler,
            HANDLER_MODE.name: settings.handler_mode,
            ACTOR_TIMEOUT.name: f"{settings.timeout:g}",
            "POWERTOOLS_SERVICE_NAME": actor,
        }
        if settings.resiliency.policies or settings.resiliency.rules:
            variables[RESILIENCY.name] = settings.resiliency.model_dump_json(exclude_defaults=True)
        if settings.secrets:
            variables[SECRETS.name] = encode_secrets({v: ref.location() for v, ref in settings.secrets.items()})
        if files:
            variables[FILES.name] = encode_files(files)
        if settings.idempotency and "idempotency_table" in resources:
            variables[IDEMPOTENCY_TABLE.name] = resources["idempotency_table"]
        if settings.tracing:
            variables[TRACING.name] = "true"
        variables.update(self.status_environment(resources))
        variables[STATUS_WRITES.name] = self.config.status.writes
        variables.update(self.join_environment(actor, resources))
        if "bucket" in resources:
            variables.update(self.claim_environment(resources["bucket"]))
        return variables

    def join_environment(self, actor: str, resources: dict[str, str]) -> dict[str, str]:
        """A source learns the joins that gather its branches; a join, its `on_failure` and its table."""
        variables = {}
        joins = self.config.joins_of(actor)
        if joins:
            variables[JOINED_BY.name] = ",".join(joins)
        join = self.config.actors[actor].join
        if join is not None:
            variables[JOIN.name] = json.dumps(join.on_failure, separators=(",", ":"))
            width = self.config.actors[actor].join_width
            if width != JOIN_MAX_WIDTH.default:
                variables[JOIN_MAX_WIDTH.name] = str(width)
            if "joins_table" in resources:  # without it, the sidecar refuses to start, naming the variable
                variables[JOINS_TABLE.name] = resources["joins_table"]
        return variables

    def claim_environment(self, bucket: str) -> dict[str, str]:
        """Where payloads over the mesh's threshold travel, for everyone who sends or keeps envelopes."""
        return {CLAIM_BUCKET.name: bucket, CLAIM_CHECK_BYTES.name: str(self.config.payloads.claim_check_bytes)}

    @property
    def joins(self) -> list[str]:
        """The join actors (`join:`), which gather their branches in the mesh's joins table."""
        return [name for name, actor in self.config.actors.items() if actor.join is not None]

    @property
    def spark_actors(self) -> list[str]:
        return [name for name, actor in self.config.actors.items() if actor.runtime == "spark"]

    def status_environment(self, resources: dict[str, str]) -> dict[str, str]:
        """What every writer of task records shares (actors, crew, gateway): the tables, when `resources`
        names them, and how long a finished task stays readable (the writers stamp `expires_at`)."""
        variables = {TASK_TTL.name: str(self.config.gateway.task_ttl_seconds)}
        for key, variable in (("tasks_table", TASKS_TABLE.name), ("events_table", EVENTS_TABLE.name)):
            if key in resources:
                variables[variable] = resources[key]
        return variables
