"""Sidecar configuration, read once per execution environment from environment variables.

Only `ASYA_NAMESPACE`, `ASYA_ACTOR_NAME` and `ASYA_HANDLER` are required; everything else has a
default, and features backed by AWS resources (cross-invocation idempotency) switch on when their
resource is named. The variables, their types and defaults are declared in `asya.variables`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

import orjson
from pydantic import ValidationError

from asya import variables
from asya.claims import Claims
from asya.envelope import describe_validation_error
from asya.handler import HandlerMode
from asya.joins import JoinPolicy
from asya.names import resource_name
from asya.resiliency import Resiliency
from asya.seal import SEAL_ROOM
from asya.variables import ConfigError

SQS_MAX_MESSAGE_BYTES = variables.MAX_MESSAGE_BYTES.default
_QUEUE_NAME_MAX = 80


T = TypeVar("T")
StatusWrites = Literal["coalesced", "every-point"]


@dataclass(frozen=True, slots=True)
class SidecarConfig:
    namespace: str
    actor: str
    handler: str
    handler_mode: HandlerMode = "payload"
    resiliency: Resiliency = field(default_factory=Resiliency)
    actor_timeout: float | None = variables.ACTOR_TIMEOUT.default
    lambda_margin: float = variables.LAMBDA_MARGIN.default
    max_message_bytes: int = variables.MAX_MESSAGE_BYTES.default
    send_attempts: int = variables.SEND_ATTEMPTS.default
    idempotency_table: str | None = None
    idempotency_ttl: int = variables.IDEMPOTENCY_TTL.default
    tasks_table: str | None = None
    events_table: str | None = None
    fly_domain: str | None = None  # FLY's fast lane: the Event API's HTTP domain (`asya.fly_channel`)
    task_ttl: int = variables.TASK_TTL.default
    status_writes: StatusWrites = "coalesced"
    tracing: bool = variables.TRACING.default
    claim_bucket: str | None = None
    claim_check_bytes: int = variables.CLAIM_CHECK_BYTES.default
    joined_by: frozenset[str] = frozenset()  # the joins that gather this actor's branches (`asya.joins`)
    flow_versions: frozenset[str] = frozenset()  # the flow programs the mesh deployed (`asya.flows`)
    join: JoinPolicy | None = None  # this actor is a join: what it does with failed branches
    join_max_width: int = variables.JOIN_MAX_WIDTH.default  # and the widest fan it gathers
    joins_table: str | None = None
    seal_secret: str | None = None  # what the mesh's envelopes are sealed with (`asya.seal`)
    state_table: str | None = None  # the actor has state (`asya.state`): its hops mark its writes
    state_bucket: str | None = None
    state_ttl_days: int | None = None

    @property
    def body_limit(self) -> int:
        """The largest body this actor may send: SQS's limit counts the seal's attribute too."""
        return self.max_message_bytes - (SEAL_ROOM if self.seal_secret else 0)

    def claims(self) -> Claims | None:
        """Where payloads over the threshold travel (`asya.claims`), if the mesh says."""
        return Claims(self.claim_bucket, self.namespace, self.claim_check_bytes) if self.claim_bucket else None

    def queue_name(self, actor: str) -> str:
        """Every actor's queue is `asya-<namespace>-<actor>`, crew included (docs/spec/envelope.md, "Queues")."""
        return resource_name(self.namespace, actor)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SidecarConfig:
        env = os.environ if env is None else env
        namespace = variables.NAMESPACE.require(env)
        actor = variables.ACTOR.require(env)
        queue = resource_name(namespace, actor)
        if len(queue) > _QUEUE_NAME_MAX:
            raise ConfigError(f"queue name {queue} is longer than SQS's {_QUEUE_NAME_MAX} characters")
        join = _join(variables.JOIN.read(env))
        if join is not None:  # a join gathers its branches in the joins table
            variables.require_all(env, f"{variables.JOIN.name} (a join actor)", variables.JOINS_TABLE)
        return cls(
            namespace=namespace,
            actor=actor,
            handler=variables.HANDLER.require(env),
            handler_mode=cast(HandlerMode, variables.HANDLER_MODE.read(env)),
            resiliency=_resiliency(variables.RESILIENCY.read(env)),
            actor_timeout=variables.ACTOR_TIMEOUT.read(env),
            lambda_margin=variables.LAMBDA_MARGIN.read(env),
            max_message_bytes=variables.MAX_MESSAGE_BYTES.read(env),
            send_attempts=variables.SEND_ATTEMPTS.read(env),
            idempotency_table=variables.IDEMPOTENCY_TABLE.read(env),
            idempotency_ttl=variables.IDEMPOTENCY_TTL.read(env),
            tasks_table=variables.TASKS_TABLE.read(env),
            events_table=variables.EVENTS_TABLE.read(env),
            fly_domain=variables.FLY_DOMAIN.read(env),
            task_ttl=variables.TASK_TTL.read(env),
            status_writes=cast(StatusWrites, variables.STATUS_WRITES.read(env)),
            tracing=variables.TRACING.read(env),
            claim_bucket=variables.CLAIM_BUCKET.read(env),
            claim_check_bytes=variables.CLAIM_CHECK_BYTES.read(env),
            joined_by=variables.listed(variables.JOINED_BY.read(env)),
            flow_versions=variables.listed(variables.FLOW_VERSIONS.read(env)),
            join=join,
            join_max_width=variables.JOIN_MAX_WIDTH.read(env),
            joins_table=variables.JOINS_TABLE.read(env),
            seal_secret=variables.SEAL_SECRET.read(env),
            state_table=variables.STATE_TABLE.read(env),
            state_bucket=variables.STATE_BUCKET.read(env),
            state_ttl_days=variables.STATE_TTL_DAYS.read(env),
        )


def _join(raw: str) -> JoinPolicy | None:
    return _json_setting(variables.JOIN.name, raw, JoinPolicy.of) if raw.strip() else None


def _resiliency(raw: str) -> Resiliency:
    return _json_setting(variables.RESILIENCY.name, raw, Resiliency.model_validate) if raw.strip() else Resiliency()


def _json_setting(name: str, raw: str, build: Callable[[Any], T]) -> T:
    """A setting written as JSON, built by `build`; a `ConfigError` naming the variable if it is not."""
    try:
        return build(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{name} is not valid JSON: {exc}") from None
    except ValidationError as exc:  # a ValueError too: said field by field
        raise ConfigError(f"{name}: {describe_validation_error(exc)}") from None
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
