"""The gateway's configuration, read once per execution environment from its function's variables."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from asya import variables
from asya.cors import parse_origins
from asya.names import resource_name
from asya.variables import ConfigError
from asya_gateway.callers import AuthSettings


@dataclass(frozen=True, slots=True)
class Flow:
    """A named route that users start (REST) or call as a tool (MCP)."""

    name: str
    route: list[str]
    description: str = ""
    timeout: float | None = None
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    program: dict[str, Any] | None = None  # a program flow's compiled program (docs/flows.md)

    def public(self) -> dict[str, Any]:
        """What `GET /flows` says of it: everything but its name (the key); a program flow's route is
        the shortest way through its program, and `program` is the program, to draw."""
        shown = {
            "route": self.route,
            "description": self.description,
            "timeout": self.timeout,
            "input_schema": self.input_schema,
        }
        return shown if self.program is None else {**shown, "program": self.program}


@dataclass(frozen=True)
class GatewaySettings:
    namespace: str
    tasks_table: str
    events_table: str
    results_bucket: str | None = None
    flows: dict[str, Flow] = field(default_factory=dict)
    task_ttl: int = variables.TASK_TTL.default
    mcp_wait_seconds: float = variables.MCP_WAIT.default
    sump_table: str | None = None
    claim_bucket: str | None = None
    claim_check_bytes: int = variables.CLAIM_CHECK_BYTES.default
    auth: AuthSettings = field(default_factory=AuthSettings)
    cursor_secret: str | None = None  # the secret the cursors' key is derived from (`asya_gateway.cursors`)
    seal_secret: str | None = None  # the secret the mesh's envelopes are sealed with (`asya.seal`)
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call (`asya.cors`)
    fly_domain: str | None = None  # FLY's fast lane: the Event API's HTTP domain (`asya_gateway.fly_feed`)
    fly_realtime_domain: str | None = None  # and its real-time one, where a follow subscribes
    tracing: bool = False  # each create the root segment of its task's trace (`asya_gateway.create_trace`)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = os.environ if env is None else env
        variables.require_all(env, "the gateway", variables.NAMESPACE, variables.TASKS_TABLE, variables.EVENTS_TABLE)
        return cls(
            namespace=variables.NAMESPACE.read(env),
            tasks_table=str(variables.TASKS_TABLE.read(env)),
            events_table=str(variables.EVENTS_TABLE.read(env)),
            results_bucket=variables.RESULTS_BUCKET.read(env),
            flows=_flows(variables.FLOWS.read(env), variables.FLOW_PROGRAMS.read(env)),
            task_ttl=variables.TASK_TTL.read(env),
            mcp_wait_seconds=variables.MCP_WAIT.read(env),
            sump_table=variables.SUMP_TABLE.read(env),
            claim_bucket=variables.CLAIM_BUCKET.read(env),
            claim_check_bytes=variables.CLAIM_CHECK_BYTES.read(env),
            auth=AuthSettings.parse(
                variables.GATEWAY_AUTH.read(env),
                variables.GATEWAY_JWKS_URL.read(env),
                variables.GATEWAY_HOSTED_UI_URL.read(env),
            ),
            cursor_secret=variables.GATEWAY_CURSOR_SECRET.read(env),
            seal_secret=variables.SEAL_SECRET.read(env),
            cors_origins=parse_origins(variables.GATEWAY_CORS_ORIGINS.read(env)),
            fly_domain=variables.FLY_DOMAIN.read(env),
            fly_realtime_domain=variables.FLY_REALTIME_DOMAIN.read(env),
            tracing=variables.TRACING.read(env),
        )

    def queue_name(self, actor: str) -> str:
        return resource_name(self.namespace, actor)

    @cached_property
    def validators(self) -> dict[str, Any]:
        """One compiled JSON Schema validator per flow (fastjsonschema, as Powertools' validation uses)."""
        import fastjsonschema

        return {name: fastjsonschema.compile(flow.input_schema) for name, flow in self.flows.items()}


def _flows(raw: str, programs_file: str) -> dict[str, Flow]:
    """The flows, a program flow with its program, read from the programs file and checked to be the
    version its flow names (the two are deployed together; apart, tasks would run a program the
    mesh file no longer has)."""
    if not raw.strip():
        return {}
    try:
        document = orjson.loads(raw)
        flows = {name: Flow(name=name, **_without_program(spec)) for name, spec in document.items()}
    except (orjson.JSONDecodeError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{variables.FLOWS.name} is not a JSON object of flows: {exc}") from None
    versions = {name: spec["program"] for name, spec in document.items() if spec.get("program")}
    if not versions:
        return flows
    programs = _programs(programs_file)
    for name, version in versions.items():
        program = programs.get(name)
        if program is None or program.get("version") != version:
            missing = f"no program of version {version} for flow {name!r} in {programs_file!r}"
            raise ConfigError(f"{variables.FLOW_PROGRAMS.name}: {missing}")
        flows[name] = dataclasses.replace(flows[name], program=program)
    return flows


def _without_program(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in spec.items() if key != "program"}


def _programs(path: str) -> dict[str, Any]:
    """The programs file; a relative path is from the function's code folder (`LAMBDA_TASK_ROOT`, the
    working folder of a function, on Lambda and on the local stack alike), where the build puts it."""
    if not path:
        raise ConfigError(f"{variables.FLOWS.name} names program flows but {variables.FLOW_PROGRAMS.name} is not set")
    try:
        with (Path(os.environ.get("LAMBDA_TASK_ROOT", ".")) / path).open("rb") as file:
            programs = orjson.loads(file.read())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ConfigError(f"{variables.FLOW_PROGRAMS.name}: cannot read {path!r}: {exc}") from None
    if not isinstance(programs, dict):
        raise ConfigError(f"{variables.FLOW_PROGRAMS.name}: {path!r} is not a JSON object of programs")
    return programs
