"""The gateway's configuration, read once per execution environment from its function's variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from asya.config import ConfigError, task_ttl
from asya.names import resource_name


@dataclass(frozen=True, slots=True)
class Flow:
    """A named route that users start (REST) or call as a tool (MCP)."""

    name: str
    route: list[str]
    description: str = ""
    timeout: float | None = None
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})


@dataclass(frozen=True)
class GatewaySettings:
    namespace: str
    tasks_table: str
    events_table: str
    results_bucket: str | None = None
    flows: dict[str, Flow] = field(default_factory=dict)
    task_ttl: int = 7 * 86_400

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = os.environ if env is None else env
        missing = [name for name in ("ASYA_NAMESPACE", "ASYA_TASKS_TABLE", "ASYA_EVENTS_TABLE") if not env.get(name)]
        if missing:
            raise ConfigError(f"{', '.join(missing)} required by the gateway")
        return cls(
            namespace=env["ASYA_NAMESPACE"],
            tasks_table=env["ASYA_TASKS_TABLE"],
            events_table=env["ASYA_EVENTS_TABLE"],
            results_bucket=env.get("ASYA_RESULTS_BUCKET") or None,
            flows=_flows(env.get("ASYA_FLOWS", "")),
            task_ttl=task_ttl(env),
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
        raise ConfigError(f"ASYA_FLOWS is not a JSON object of flows: {exc}") from None
