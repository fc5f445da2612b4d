"""Sidecar configuration, read once per execution environment from environment variables.

Only `ASYA_NAMESPACE`, `ASYA_ACTOR_NAME` and `ASYA_HANDLER` are required; everything else has a
default, and features backed by AWS resources (cross-invocation idempotency) switch on when their
resource is named. The full table lives in `docs/configuration.md`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

import orjson
from pydantic import ValidationError

from asya.envelope import describe_validation_error
from asya.handler import HandlerMode
from asya.names import ACTOR_NAME, resource_name
from asya.resiliency import Resiliency

SQS_MAX_MESSAGE_BYTES = 1_048_576
_NAME = re.compile(ACTOR_NAME)
_QUEUE_NAME_MAX = 80


StatusWrites = Literal["coalesced", "every-point"]


class ConfigError(ValueError):
    """A configuration variable is missing or wrong; the message names the variable."""


@dataclass(frozen=True, slots=True)
class SidecarConfig:
    namespace: str
    actor: str
    handler: str
    handler_mode: HandlerMode = "payload"
    resiliency: Resiliency = field(default_factory=Resiliency)
    actor_timeout: float | None = None
    lambda_margin: float = 2.0
    max_message_bytes: int = SQS_MAX_MESSAGE_BYTES
    send_attempts: int = 3
    idempotency_table: str | None = None
    idempotency_ttl: int = 3600
    tasks_table: str | None = None
    events_table: str | None = None
    task_ttl: int = 7 * 86_400
    status_writes: StatusWrites = "coalesced"
    tracing: bool = False

    def queue_name(self, actor: str) -> str:
        """Every actor's queue is `asya-<namespace>-<actor>`, crew included (SPEC §4)."""
        return resource_name(self.namespace, actor)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SidecarConfig:
        env = os.environ if env is None else env
        namespace = _name(env, "ASYA_NAMESPACE")
        actor = _name(env, "ASYA_ACTOR_NAME")
        queue = resource_name(namespace, actor)
        if len(queue) > _QUEUE_NAME_MAX:
            raise ConfigError(f"queue name {queue} is longer than SQS's {_QUEUE_NAME_MAX} characters")
        mode = env.get("ASYA_HANDLER_MODE", "payload")
        if mode not in ("payload", "envelope"):
            raise ConfigError(f"ASYA_HANDLER_MODE must be 'payload' or 'envelope', got {mode!r}")
        writes = env.get("ASYA_STATUS_WRITES", "coalesced")
        if writes not in ("coalesced", "every-point"):
            raise ConfigError(f"ASYA_STATUS_WRITES must be 'coalesced' or 'every-point', got {writes!r}")
        return cls(
            namespace=namespace,
            actor=actor,
            handler=_required(env, "ASYA_HANDLER"),
            handler_mode=cast(Literal["payload", "envelope"], mode),
            resiliency=_resiliency(env.get("ASYA_RESILIENCY", "")),
            actor_timeout=_optional_number(env, "ASYA_ACTOR_TIMEOUT_SECONDS", minimum=0.001),
            lambda_margin=_number(env, "ASYA_LAMBDA_MARGIN_SECONDS", 2.0, minimum=0.0),
            max_message_bytes=int(_number(env, "ASYA_MAX_MESSAGE_BYTES", SQS_MAX_MESSAGE_BYTES, minimum=1024)),
            send_attempts=int(_number(env, "ASYA_SEND_ATTEMPTS", 3, minimum=1)),
            idempotency_table=env.get("ASYA_IDEMPOTENCY_TABLE") or None,
            idempotency_ttl=idempotency_ttl(env),
            tasks_table=env.get("ASYA_TASKS_TABLE") or None,
            events_table=env.get("ASYA_EVENTS_TABLE") or None,
            task_ttl=task_ttl(env),
            status_writes=cast(StatusWrites, writes),
            tracing=_flag(env, "ASYA_TRACING"),
        )


def task_ttl(env: Mapping[str, str]) -> int:
    """How long a finished task stays readable (`ASYA_TASK_TTL_SECONDS`), shared by every writer."""
    return int(_number(env, "ASYA_TASK_TTL_SECONDS", 7 * 86_400, minimum=60))


def idempotency_ttl(env: Mapping[str, str]) -> int:
    """How long a hop's claim is remembered (`ASYA_IDEMPOTENCY_TTL_SECONDS`), by actors and x-sink alike."""
    return int(_number(env, "ASYA_IDEMPOTENCY_TTL_SECONDS", 3600, minimum=1))


def inline_max_bytes(env: Mapping[str, str]) -> int:
    """Results up to this many bytes of JSON payload are kept in the task record, not in S3
    (`ASYA_RESULTS_INLINE_MAX_BYTES`, x-sink; 0 keeps every result in S3)."""
    return int(_number(env, "ASYA_RESULTS_INLINE_MAX_BYTES", 0, minimum=0))


def results_ttl(env: Mapping[str, str]) -> int:
    """How long a result is kept (`ASYA_RESULTS_TTL_SECONDS`): the bucket's lifecycle, and the life of
    a task record that holds its result."""
    return int(_number(env, "ASYA_RESULTS_TTL_SECONDS", 0, minimum=0))


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is required")
    return value


def _name(env: Mapping[str, str], name: str) -> str:
    value = _required(env, name)
    if not _NAME.match(value):
        raise ConfigError(
            f"{name}={value!r} may only contain lower-case letters, digits and '-', starting with a letter or a "
            "digit, as the mesh file's names (it becomes a queue name)"
        )
    return value


def _number(env: Mapping[str, str], name: str, default: float, minimum: float) -> float:
    value = _optional_number(env, name, minimum)
    return default if value is None else value


def _optional_number(env: Mapping[str, str], name: str, minimum: float) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if value < minimum:
        raise ConfigError(f"{name}={raw!r} must be at least {minimum}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw not in ("", "0", "1", "true", "false", "on", "off"):
        raise ConfigError(f"{name}={raw!r} must be true or false")
    return raw in ("1", "true", "on")


def _resiliency(raw: str) -> Resiliency:
    if not raw.strip():
        return Resiliency()
    try:
        return Resiliency.model_validate(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"ASYA_RESILIENCY is not valid JSON: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"ASYA_RESILIENCY: {describe_validation_error(exc)}") from None
