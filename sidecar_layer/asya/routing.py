"""The routing table (SPEC §6): where each outcome of a hop sends the envelope, and in what shape.

| outcome                                   | function           | destination          | route     |
|-------------------------------------------|--------------------|----------------------|-----------|
| output frame (`next` empty → x-sink)      | `forward`          | next actor / x-sink  | shifted   |
| handler returned `None`                   | `finish_unshifted` | x-sink               | unchanged |
| handler raised, policy retries            | `retry`            | own queue, delayed   | unchanged |
| handler raised, no retry left / no policy | `fail`             | x-sink               | unchanged |
| ... with `on_exhausted: [actors]`         | `fail`             | first of those       | replaced  |
| `status.deadline_at` already passed       | `fail` (Timeout)   | x-sink               | unchanged |
| task canceled or paused (pre-flight)      | `halt`             | x-sink               | unchanged |
| infrastructure error                      | `to_sump`          | x-sump               | unchanged |

Every function returns an `Outbound` holding the wire form of the envelope; nothing here sends.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from asya.abi import Frame
from asya.envelope import Envelope, Phase, parse_rfc3339, rfc3339
from asya.names import SINK, SUMP
from asya.reasons import Reason
from asya.status import ROOT_HEADER, root_of
from asya.tracecontext import continue_trace
from asya.transport import SQS_MAX_DELAY_SECONDS, SQS_QUEUE_NAME_MAX

FIRST_ATTEMPT_HEADER = "x-asya-first-attempt"
NOT_BEFORE_HEADER = "x-asya-not-before"
TRACEBACK_LIMIT_CHARS = 8_192
MESSAGE_LIMIT_CHARS = 2_048
_HOP_HEADERS = frozenset({FIRST_ATTEMPT_HEADER, NOT_BEFORE_HEADER})  # belong to one actor's attempts


class Kind(StrEnum):
    """Destination kinds, used as a metric dimension."""

    ACTOR = "actor"
    SELF = "self"
    SINK = "sink"
    SUMP = "sump"


@dataclass(slots=True)
class Outbound:
    destination: str
    kind: Kind
    wire: dict[str, Any]
    delay: float = 0.0


def error_details(error: BaseException | None, message: str | None = None) -> dict[str, Any]:
    """`{message, type, mro, traceback}` for the error payload and `status.error`, bounded in size so
    that an error quoting its input cannot push the failure envelope over the SQS limit."""
    if error is None:
        return {"message": (message or "")[:MESSAGE_LIMIT_CHARS], "type": None, "mro": [], "traceback": None}
    trace = "".join(traceback.format_exception(error))
    return {
        "message": (message or _message_of(error))[:MESSAGE_LIMIT_CHARS],
        "type": type(error).__name__,
        "mro": [f"{cls.__module__}.{cls.__qualname__}" for cls in type(error).__mro__],
        "traceback": trace[-TRACEBACK_LIMIT_CHARS:],
    }


def _message_of(error: BaseException) -> str:
    """The error's message, or its type's name: an error whose `__str__` itself fails must still be
    reported, not turn the report of a handler error into a crash of the hop."""
    try:
        return str(error) or type(error).__name__
    except Exception:  # noqa: BLE001 - any failure of user code forming a message
        return f"{type(error).__name__} (its message could not be formed)"


def error_payload(reason: Reason, details: dict[str, Any], original_payload: Any) -> dict[str, Any]:
    return {"error": reason.code, "details": details, "original_payload": original_payload}


def child_id(parent: Envelope, index: int) -> str:
    """Id of fan-out output `index` (≥ 1): a version-4-format UUID derived from the hop, not drawn at
    random, so that re-running the same hop after a redelivery yields the same ids and the next actor
    can drop the duplicates."""
    attempt = parent.status.attempt if parent.status else 1
    seed = f"{parent.id}\x1f{parent.route.position}\x1f{attempt}\x1f{index}".encode()
    return str(uuid.UUID(bytes=hashlib.sha256(seed).digest()[:16], version=4))


def _status(envelope: Envelope, now: dt.datetime, **changes: Any) -> dict[str, Any]:
    status = envelope.status.model_dump(mode="json", exclude_none=True) if envelope.status else {}
    return _stamped(status, now, **changes)


def _stamped(status: dict[str, Any], now: dt.datetime, **changes: Any) -> dict[str, Any]:
    stamped = {"created_at": rfc3339(now), **status, "updated_at": rfc3339(now), **changes}
    return {key: value for key, value in stamped.items() if value is not None}


def _wire(envelope: Envelope, **fields: Any) -> dict[str, Any]:
    wire = envelope.to_dict(**fields)
    if wire.get("parent_id") is None:
        wire.pop("parent_id", None)
    return wire


def forward(
    envelope: Envelope, frame: Frame, index: int, actor: str, now: dt.datetime, *, fanned_out: bool = False
) -> Outbound:
    """An output frame: shift the route and go to the new `curr`, or to x-sink when the route is done.
    Every output of a fan-out (`fanned_out`) names the root task: a branch, whose status is accounted
    on the root, and the first output too, which goes on as the root's own envelope, so that x-sink
    knows the root has branches to wait for without trying to end it alone first."""
    prev = [*envelope.route.prev, envelope.route.curr]
    curr, rest = (frame.next[0], frame.next[1:]) if frame.next else ("", [])
    headers = continue_trace({k: v for k, v in frame.headers.items() if k not in _HOP_HEADERS})
    if index or fanned_out:
        headers[ROOT_HEADER] = root_of(envelope.id, envelope.headers)
    if curr:
        status = _stamped(frame.status, now, phase=Phase.PROCESSING.value, actor=curr, attempt=1, max_attempts=None)
    else:
        status = _stamped(
            frame.status,
            now,
            phase=Phase.SUCCEEDED.value,
            actor=actor,
            reason=Reason.COMPLETED.value,
            max_attempts=None,
        )
    wire = _wire(
        envelope,
        id=envelope.id if index == 0 else child_id(envelope, index),
        parent_id=envelope.parent_id if index == 0 else envelope.id,
        route={"prev": prev, "curr": curr, "next": rest},
        headers=headers,
        status=status,
        payload=frame.payload,
    )
    return Outbound(curr or SINK, Kind.ACTOR if curr else Kind.SINK, wire)


def finish_unshifted(envelope: Envelope, actor: str, now: dt.datetime) -> Outbound:
    """The handler returned `None`: nothing more to do; x-sink receives the envelope as it came."""
    status = _status(envelope, now, phase=Phase.SUCCEEDED.value, actor=actor, reason=Reason.COMPLETED.value)
    return Outbound(SINK, Kind.SINK, _wire(envelope, headers=continue_trace(envelope.headers), status=status))


def halt(envelope: Envelope, actor: str, phase: Phase, now: dt.datetime) -> Outbound:
    """Pre-flight: the task was canceled or paused, so the handler is not called; x-sink keeps the
    envelope as it came, with that phase."""
    reason = Reason.CANCELED if phase is Phase.CANCELED else Reason.PAUSED
    status = _status(envelope, now, phase=phase.value, actor=actor, reason=reason.value)
    return Outbound(SINK, Kind.SINK, _wire(envelope, status=status))


def retry(
    envelope: Envelope, actor: str, *, attempt: int, max_attempts: int, delay: float, now: dt.datetime
) -> Outbound:
    """Back to the actor's own queue with a delay; past SQS's 15-minute cap, `x-asya-not-before`
    carries the real due time and the envelope goes round the queue until then (`defer_if_early`)."""
    status = _status(envelope, now, phase=Phase.RETRYING.value, actor=actor, attempt=attempt, max_attempts=max_attempts)
    headers = {k: v for k, v in envelope.headers.items() if k != NOT_BEFORE_HEADER}
    if delay > SQS_MAX_DELAY_SECONDS:
        headers[NOT_BEFORE_HEADER] = rfc3339(now + dt.timedelta(seconds=delay))
    wire = _wire(envelope, headers=headers, status=status)
    return Outbound(actor, Kind.SELF, wire, delay=min(delay, SQS_MAX_DELAY_SECONDS))


def defer_if_early(envelope: Envelope, actor: str, now: dt.datetime) -> Outbound | None:
    """An envelope that arrives before its `x-asya-not-before` goes round again, for at most 15 minutes."""
    due_text = envelope.headers.get(NOT_BEFORE_HEADER)
    due = parse_rfc3339(due_text) if isinstance(due_text, str) else None
    if due is None or due <= now:
        return None
    remaining = (due - now).total_seconds()
    return Outbound(actor, Kind.SELF, envelope.to_dict(), delay=min(remaining, SQS_MAX_DELAY_SECONDS))


def fail(
    envelope: Envelope,
    actor: str,
    *,
    reason: Reason,
    details: dict[str, Any],
    now: dt.datetime,
    on_exhausted: list[str] | None = None,
) -> Outbound:
    """A handled failure: x-sink with phase `failed`, or the first `on_exhausted` actor."""
    reason = Reason.POLICY_ROUTED if on_exhausted else reason
    status = _status(envelope, now, phase=Phase.FAILED.value, actor=actor, reason=reason.value, error=details)
    payload = error_payload(reason, details, envelope.payload)
    if on_exhausted:
        route = {"prev": [*envelope.route.prev, envelope.route.curr], "curr": on_exhausted[0], "next": on_exhausted[1:]}
        return Outbound(on_exhausted[0], Kind.ACTOR, _wire(envelope, route=route, status=status, payload=payload))
    return Outbound(SINK, Kind.SINK, _wire(envelope, status=status, payload=payload))


def to_sump(envelope: Envelope, actor: str, reason: Reason, details: dict[str, Any], now: dt.datetime) -> Outbound:
    """An infrastructure error: straight to x-sump, bypassing resiliency."""
    status = _status(envelope, now, phase=Phase.FAILED.value, actor=actor, reason=reason.value, error=details)
    return Outbound(
        SUMP, Kind.SUMP, _wire(envelope, status=status, payload=error_payload(reason, details, envelope.payload))
    )


def unsendable(kind: Kind, queue: str, has_queue: Callable[[str], bool]) -> bool:
    """An output for an actor with no queue in this namespace (a name in `route.next`, a handler's
    `SET .route.next` or a policy's `on_exhausted` that was never deployed) could never be sent: left
    for redelivery, its record would run again and again until SQS gave up on it."""
    return kind is Kind.ACTOR and (len(queue) > SQS_QUEUE_NAME_MAX or not has_queue(queue))


def unknown_actor(envelope: Envelope, actor: str, queue: str, now: dt.datetime) -> Outbound:
    """What an envelope whose output is `unsendable` becomes instead: x-sump at once."""
    details = error_details(None, f"no queue {queue:.200} for an actor in this namespace")
    return to_sump(envelope, actor, Reason.UNKNOWN_ACTOR, details, now)


def raw_to_sump(
    raw: Any, message_id: str, actor: str, *, reason: Reason, details: dict[str, Any], now: dt.datetime
) -> Outbound:
    """A message that is not a valid envelope still reaches x-sump, keeping whatever can be kept."""
    document = raw if isinstance(raw, dict) else {}
    raw_id = document.get("id")
    route = document.get("route")
    route_ok = isinstance(route, dict) and isinstance(route.get("curr"), str)
    wire = {
        "id": raw_id if isinstance(raw_id, str) and raw_id else f"sqs-{message_id}",
        "route": route if route_ok else {"prev": [], "curr": "", "next": []},
        "headers": document.get("headers") if isinstance(document.get("headers"), dict) else {},
        "status": {
            "phase": Phase.FAILED.value,
            "actor": actor,
            "attempt": 1,
            "created_at": rfc3339(now),
            "updated_at": rfc3339(now),
            "reason": reason.value,
            "error": details,
        },
        "payload": error_payload(reason, details, raw),
    }
    return Outbound(SUMP, Kind.SUMP, wire)


PREVIEW_CHARS = 4_096


def sump_body(wire: dict[str, Any], original: str) -> str:
    """The body of a failure envelope bound for x-sump, even when what it quotes cannot be written as
    JSON (nested past orjson's 254 levels, lone surrogates): such parts are dropped, and the original
    payload is kept as a text preview of the message as it arrived, so x-sump still gets the envelope's
    id, route, reason and error at the first delivery."""
    try:
        return orjson.dumps(wire).decode()
    except TypeError:
        pass
    kept: dict[str, Any] = {"route": {"prev": [], "curr": "", "next": []}, "headers": {}}
    for key, value in wire.items():
        part = {field: item for field, item in value.items() if _writable(item, 2)} if key == "status" else value
        if key != "payload" and _writable(part, 1):
            kept[key] = part
    payload = dict(wire["payload"])
    if not _writable(payload.get("original_payload"), 2):
        preview = original[:PREVIEW_CHARS].encode("utf-8", "backslashreplace").decode()
        payload["original_payload"] = {"unwritable": True, "size_chars": len(original), "preview": preview}
    kept["payload"] = payload
    return orjson.dumps(kept).decode()


def _writable(value: Any, depth: int) -> bool:
    """Whether `value` can be written where it sits, `depth` containers down in the envelope."""
    for _ in range(depth):
        value = [value]
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True
