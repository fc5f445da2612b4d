"""A validated mesh with the folder it was read from, and what the stack derives from it for each
function: its environment, its files, its libraries, its /tmp."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from asya.flow_program import Program
from asya.names import CREW, SUMP, resource_name
from asya.startup import FileKind, FileSource, encode_files, encode_secrets
from asya.variables import (
    ACTOR,
    ACTOR_TIMEOUT,
    CLAIM_BUCKET,
    CLAIM_CHECK_BYTES,
    EVENTS_TABLE,
    FILES,
    FLOW_VERSIONS,
    HANDLER,
    HANDLER_MODE,
    IDEMPOTENCY_TABLE,
    JOIN,
    JOIN_MAX_WIDTH,
    JOINED_BY,
    JOINS_TABLE,
    NAMESPACE,
    RESILIENCY,
    SEAL_SECRET,
    SECRETS,
    STATE_BUCKET,
    STATE_TABLE,
    STATE_TTL_DAYS,
    STATUS_WRITES,
    TASK_TTL,
    TASKS_TABLE,
    TRACING,
)
from asya_cdk.actor_config import CREW_SETTINGS
from asya_cdk.config import MeshConfig
from asya_cdk.libraries import Requirements
from asya_cdk.needs import (
    LAMBDA_EPHEMERAL_STORAGE_MB,
    TMP_SPARE_MB,
    s3_location,
)

REQUIREMENTS_FILE = "requirements.txt"  # in an actor's code folder: its libraries, unless the mesh file lists them


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

    def flow_versions(self) -> str:
        """`ASYA_FLOW_VERSIONS`: the programs' versions, 13 bytes each, for every function that runs one."""
        return ",".join(sorted(program["version"] for program in self.programs.values()))

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
        for entry in self.config.actors[actor].files.values():
            given = entry.source
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
        for variable, entry in self.config.actors[actor].files.items():
            given = entry.source
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
        if settings.state is not None and "state_table" in resources:
            variables[STATE_TABLE.name] = resources["state_table"]
            if "state_bucket" in resources:
                variables[STATE_BUCKET.name] = resources["state_bucket"]
            if settings.state.ttl_days is not None:
                variables[STATE_TTL_DAYS.name] = str(settings.state.ttl_days)
        variables.update(self.status_environment(resources))
        variables[STATUS_WRITES.name] = self.config.status.writes
        if self.programs:  # the only programs its envelopes' headers may carry (docs/flows.md, "Safety")
            variables[FLOW_VERSIONS.name] = self.flow_versions()
        variables.update(self.join_environment(actor, resources))
        if "bucket" in resources:
            variables.update(self.claim_environment(resources["bucket"]))
        if "seal_secret" in resources:  # what its envelopes are sealed with (`asya.seal`)
            variables[SEAL_SECRET.name] = resources["seal_secret"]
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
    def stateful(self) -> list[str]:
        """The actors with `state:`, whose keys the mesh's state table holds."""
        return [name for name, actor in self.config.actors.items() if actor.state is not None]

    @property
    def expiring_state(self) -> dict[str, int]:
        """The actors whose state keys expire, and after how many days (`state.ttl_days`)."""
        actors = self.config.actors.items()
        return {name: a.state.ttl_days for name, a in actors if a.state is not None and a.state.ttl_days is not None}

    @property
    def spark_actors(self) -> list[str]:
        return [name for name, actor in self.config.actors.items() if actor.runtime == "spark"]

    @property
    def container_actors(self) -> list[str]:
        return [name for name, actor in self.config.actors.items() if actor.runtime == "container"]

    def status_environment(self, resources: dict[str, str]) -> dict[str, str]:
        """What every writer of task records shares (actors, crew, gateway): the tables, when `resources`
        names them, and how long a finished task stays readable (the writers stamp `expires_at`)."""
        variables = {TASK_TTL.name: str(self.config.gateway.task_ttl_seconds)}
        for key, variable in (("tasks_table", TASKS_TABLE.name), ("events_table", EVENTS_TABLE.name)):
            if key in resources:
                variables[variable] = resources[key]
        return variables
