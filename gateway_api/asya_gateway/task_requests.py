"""What a client may ask of a task, whichever door it comes in by: a route of actors it may name, headers
that are not the mesh's own (a reporting URL only if it is one), and an idempotency key, with the task id
that key makes. Checks of the request alone, before anything is read or written: `TaskService` applies
them, and x-sump's redrive applies the headers' (`asya_gateway.sump`).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from asya import names
from asya.headers import CLIENT_HEADERS, GATEWAY_URL_HEADER, RESERVED_PREFIX
from asya_gateway.task_error import TaskError

ACTOR_NAME = re.compile(names.ACTOR_NAME)

# A client's key for one create (`Idempotency-Key`): printable ASCII, as HTTP carries it in a header.
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_IDEMPOTENT_TASKS = uuid.UUID("5d1f3c52-0b6e-4c1e-9f1a-6f1c0a6b2e44")  # the namespace of ids made from keys


def idempotent_task_id(namespace: str, key: str, owner: str | None = None) -> str:
    """The task id a create with this key makes, in this mesh, for this caller (`owner`): the same for
    every retry of it. Each caller's keys are its own, so one caller's key never finds another's task;
    an assumed role's sessions are one caller (`gateway.ownership: role`), so a retry from a new session
    finds the task."""
    scope = namespace if owner is None else f"{namespace}\n{owner}"
    return str(uuid.uuid5(_IDEMPOTENT_TASKS, f"{scope}\n{key}"))


def checked_route(route: list[str] | None, field: str = "route") -> list[str]:
    """A route a client gives (`field` says where): actors it may name, none of the crew's but x-pause."""
    if not route:
        raise TaskError(400, "give either 'flow' or a non-empty 'route'")
    for index, actor in enumerate(route):
        if not ACTOR_NAME.match(actor) or not names.routable(actor):
            where = f"{field}[{index}]" if field == "route" else field
            raise TaskError(400, f"{where}: {actor!r} is not an actor a route may name")
    return route


def client_headers(headers: dict[str, Any]) -> dict[str, Any]:
    """Headers a client may set: none of the mesh's own `x-asya-*` but those it allows."""
    reserved = sorted(key for key in headers if key.startswith(RESERVED_PREFIX) and key not in CLIENT_HEADERS)
    if reserved:
        raise TaskError(400, f"headers: {', '.join(reserved)} are set by the mesh, not by clients")
    kept = dict(headers)
    if not _reporting_url(kept.get(GATEWAY_URL_HEADER)):
        kept.pop(
            GATEWAY_URL_HEADER, None
        )  # docs/spec/envelope.md, "Reserved headers": only http(s) URLs with a host; the rest is ignored
    return kept


def _reporting_url(value: Any) -> bool:
    """The SSRF guard: a URL to report to must be http(s) and name a host."""
    from urllib.parse import urlsplit

    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname)
