"""The gateway's configuration, read once per execution environment from its function's variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from asya import variables
from asya.names import resource_name
from asya.variables import ConfigError


@dataclass(frozen=True, slots=True)
class Flow:
    """A named route that users start (REST) or call as a tool (MCP)."""

    name: str
    route: list[str]
    description: str = ""
    timeout: float | None = None
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def public(self) -> dict[str, Any]:
        """What `GET /flows` says of it: everything but its name (the key)."""
        return {
            "route": self.route,
            "description": self.description,
            "timeout": self.timeout,
            "input_schema": self.input_schema,
        }


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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = os.environ if env is None else env
        variables.require_all(env, "the gateway", variables.NAMESPACE, variables.TASKS_TABLE, variables.EVENTS_TABLE)
        return cls(
            namespace=variables.NAMESPACE.read(env),
            tasks_table=str(variables.TASKS_TABLE.read(env)),
            events_table=str(variables.EVENTS_TABLE.read(env)),
            results_bucket=variables.RESULTS_BUCKET.read(env),
            flows=_flows(variables.FLOWS.read(env)),
            task_ttl=variables.TASK_TTL.read(env),
            mcp_wait_seconds=variables.MCP_WAIT.read(env),
            sump_table=variables.SUMP_TABLE.read(env),
            claim_bucket=variables.CLAIM_BUCKET.read(env),
            claim_check_bytes=variables.CLAIM_CHECK_BYTES.read(env),
        )

    def queue_name(self, actor: str) -> str:
        return resource_name(self.namespace, actor)

    @cached_property
    def validators(self) -> dict[str, Any]:
        """One compiled JSON Schema validator per flow (fastjsonschema, as Powertools' validation uses)."""
        import fastjsonschema

        return {name: fastjsonschema.compile(flow.input_schema) for name, flow in self.flows.items()}


def _flows(raw: str) -> dict[str, Flow]:
    if not raw.strip():
        return {}
    try:
        document = orjson.loads(raw)
        return {name: Flow(name=name, **spec) for name, spec in document.items()}
    except (orjson.JSONDecodeError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{variables.FLOWS.name} is not a JSON object of flows: {exc}") from None
