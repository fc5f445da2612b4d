"""The routing table (docs/routing.md): where each outcome of a hop sends the envelope, and in what shape.

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
| a join's branches gathered (`asya.joins`) | `rejoin`           | the join actor       | moved on  |

Every function returns an `Outbound`: the wire form of the envelope, only ever serialized, and the
`Decision` it carries, typed, which is what every later step reads (metrics, the status reporter, the
Spark collector). Nothing here sends.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import orjson

from asya.abi import Frame
from asya.envelope import ENVELOPE_VERSION, Envelope, Phase, parse_rfc3339, rfc3339
from asya.fans import bucket_of
from asya.headers import (
    FAN_HEADER,
    FIRST_ATTEMPT_HEADER,
    JOIN_HEADER,
    JOINED_HEADER,
    NOT_BEFORE_HEADER,
    ROOT_HEADER,
    TRACEPARENT,
)
from asya.names import SINK, SUMP
from asya.reasons import Reason
from asya.task_record import redrives, root_of, stealthy
from asya.tracecontext import continue_trace, next_traceparent
from asya.transport import SQS_MAX_DELAY_SECONDS, SQS_QUEUE_NAME_MAX

TRACEBACK_LIMIT_CHARS = 8_192
MESSAGE_LIMIT_CHARS = 2_048
# belong to one actor's attempts (a joined envelope's marker, to the join's), not to its outputs
_HOP_HEADERS = frozenset({FIRST_ATTEMPT_HEADER, NOT_BEFORE_HEADER, JOINED_HEADER})


class Kind(StrEnum):
    """Destination kinds, used as a metric dimension."""

    ACTOR = "actor"
    SELF = "self"
    SINK = "sink"
    SUMP = "sump"


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, on every hop
class Decision:
    """What a hop decided for one output, as the steps after routing need it: where it goes (`kind`),
    the task it moves (`task_id`, accounted on `root_id`; `branch` for a new fan-out branch), where
    that task now is on its route, and its phase, reason and attempt. The Spark job writes it beside
    each output, so the collector reads neither the outputs nor the inputs back."""

    kind: Kind
    task_id: str
    parent_id: str | None
    root_id: str
    prev: list[str]
    curr: str
    next: list[str]
    phase: Phase
    reason: Reason | None = None
    attempt: int = 1
    branch: bool = False
    tracked: bool = True  # its status is reported (the input did not turn status off)
    joined: bool = False  # a branch its join gathers, which accounts for it (`asya.joins`), not the root

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Decision:
        enums = {"kind": Kind(document["kind"]), "phase": Phase(document["phase"])}
        reason = document.get("reason")
        return cls(**{**document, **enums, "reason": None if reason is None else Reason(reason)})


@dataclass(slots=True)
class Outbound:
    destination: str
    wire: dict[str, Any]  # the envelope as it is sent: serialized, never read back
    decision: Decision
    delay: float = 0.0

    @property
    def kind(self) -> Kind:
        return self.decision.kind


# what `forward` stamps on every hop's output, reached once: an Enum's member costs 0.1 µs to reach, its
# `value` as much again
_PROCESSING, _SUCCEEDED, _COMPLETED = Phase.PROCESSING, Phase.SUCCEEDED, Reason.COMPLETED
_PROCESSING_TEXT, _SUCCEEDED_TEXT, _COMPLETED_TEXT = _PROCESSING.value, _SUCCEEDED.value, _COMPLETED.value
_ACTOR, _SINK = Kind.ACTOR, Kind.SINK


def _decided(
    envelope: Envelope,
    kind: Kind,
    phase: Phase,
    reason: Reason | None = None,
    *,
    attempt: int | None = None,
    route: tuple[list[str], str, list[str]] | None = None,
) -> Decision:
    """The decision for an output that keeps the input's id (all but a fan-out's branches)."""
    prev, curr, rest = route or (envelope.route.prev, envelope.route.curr, envelope.route.next)
    return Decision(
        kind,
        envelope.id,
        envelope.parent_id,
        root_of(envelope.id, envelope.headers),
        prev,
        curr,
        rest,
        phase,
        reason,
        attempt if attempt is not None else envelope.status.attempt if envelope.status else 1,
        tracked=not stealthy(envelope.headers),
    )


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
    seed = f"{parent.id}\x1f{parent.route.position}\x1f{attempt}\x1f{index}"
    redriven = redrives(parent.headers)
    if redriven:  # a redriven hop's children are new tasks, not the failed run's (which have ended)
        seed += f"\x1f{redriven}"
    return str(uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16], version=4))


def _status(envelope: Envelope, now: dt.datetime, **changes: Any) -> dict[str, Any]:
    return _stamped(envelope.status_wire(), now, **changes)


def _stamped(status: dict[str, Any], now: dt.datetime, **changes: Any) -> dict[str, Any]:
    moment = rfc3339(now)
    stamped = {"created_at": moment, **status, "updated_at": moment, **changes}
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
    headers = {k: v for k, v in frame.headers.items() if k not in _HOP_HEADERS}
    headers[TRACEPARENT] = next_traceparent(headers.get(TRACEPARENT, ""))
    joins = envelope.headers.get(JOIN_HEADER)  # the sidecar's, whatever the handler did to it
    if joins is None:
        headers.pop(JOIN_HEADER, None)
    else:
        headers[JOIN_HEADER] = joins
    root = root_of(envelope.id, envelope.headers)
    if index or fanned_out:
        headers[ROOT_HEADER] = root
    # the bucket a branch is counted in is the sidecar's to say: a new branch gets its own once it is
    # registered (`asya.fans`), the envelope going on keeps the one it came with
    bucket = bucket_of(envelope.headers) if index == 0 else None
    if bucket is None:
        headers.pop(FAN_HEADER, None)
    else:
        headers[FAN_HEADER] = bucket
    if curr:
        phase, reason, kind = _PROCESSING, None, _ACTOR
        status = _stamped(frame.status, now, phase=_PROCESSING_TEXT, actor=curr, attempt=1, max_attempts=None)
    else:
        phase, reason, kind = _SUCCEEDED, _COMPLETED, _SINK
        status = _stamped(
            frame.status, now, phase=_SUCCEEDED_TEXT, actor=actor, reason=_COMPLETED_TEXT, max_attempts=None
        )
    task_id = envelope.id if index == 0 else child_id(envelope, index)
    parent_id = envelope.parent_id if index == 0 else envelope.id
    wire = _wire(
        envelope,
        id=task_id,
        parent_id=parent_id,
        route={"prev": prev, "curr": curr, "next": rest},
        headers=headers,
        status=status,
        payload=frame.payload,
    )
    decision = Decision(
        kind,
        task_id,
        parent_id,
        root,
        prev,
        curr,
        rest,
        phase,
        reason,
        branch=index > 0,
        tracked=not stealthy(envelope.headers),
    )
    return Outbound(curr or SINK, wire, decision)


def rejoin(envelope: Envelope, join: str, payload: Any, headers: dict[str, Any], now: dt.datetime) -> Outbound:
    """A joined envelope (`asya.joins`): `envelope` (the branch it goes on as, or a source's input
    that had nothing to fan out) at the join actor `join`, carrying `payload`, the gathered list. Its
    route moves on to the join, leaving out actors it did not visit, and it starts there at attempt 1."""
    route = envelope.route
    if route.curr == join:
        prev, rest = route.prev, route.next
    else:
        prev = [*route.prev, route.curr]
        rest = route.next[route.next.index(join) + 1 :] if join in route.next else []
    status = _status(
        envelope, now, phase=Phase.PROCESSING.value, actor=join, attempt=1, max_attempts=None, reason=None, error=None
    )
    kept = {name: value for name, value in headers.items() if name not in (FIRST_ATTEMPT_HEADER, NOT_BEFORE_HEADER)}
    wire = _wire(
        envelope, route={"prev": prev, "curr": join, "next": rest}, headers=kept, status=status, payload=payload
    )
    return Outbound(join, wire, _decided(envelope, Kind.ACTOR, Phase.PROCESSING, attempt=1, route=(prev, join, rest)))


def finish_unshifted(envelope: Envelope, actor: str, now: dt.datetime) -> Outbound:
    """The handler returned `None`: nothing more to do; x-sink receives the envelope as it came."""
    status = _status(envelope, now, phase=Phase.SUCCEEDED.value, actor=actor, reason=Reason.COMPLETED.value)
    wire = _wire(envelope, headers=continue_trace(envelope.headers), status=status)
    return Outbound(SINK, wire, _decided(envelope, Kind.SINK, Phase.SUCCEEDED, Reason.COMPLETED))


def halt(envelope: Envelope, actor: str, phase: Phase, now: dt.datetime) -> Outbound:
    """Pre-flight: the task was canceled or paused, so the handler is not called; x-sink keeps the
    envelope as it came, with that phase."""
    reason = Reason.CANCELED if phase is Phase.CANCELED else Reason.PAUSED
    status = _status(envelope, now, phase=phase.value, actor=actor, reason=reason.value)
    return Outbound(SINK, _wire(envelope, status=status), _decided(envelope, Kind.SINK, phase, reason))


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
    decision = _decided(envelope, Kind.SELF, Phase.RETRYING, attempt=attempt)
    return Outbound(actor, wire, decision, delay=min(delay, SQS_MAX_DELAY_SECONDS))


def defer_if_early(envelope: Envelope, actor: str, now: dt.datetime) -> Outbound | None:
    """An envelope that arrives before its `x-asya-not-before` goes round again, for at most 15 minutes."""
    due_text = envelope.headers.get(NOT_BEFORE_HEADER)
    due = parse_rfc3339(due_text) if isinstance(due_text, str) else None
    if due is None or due <= now:
        return None
    remaining = (due - now).total_seconds()
    decision = _decided(envelope, Kind.SELF, envelope.status.phase if envelope.status else Phase.PENDING)
    return Outbound(actor, envelope.to_dict(), decision, delay=min(remaining, SQS_MAX_DELAY_SECONDS))


def admitted(envelope: Envelope, actor: str) -> Outbound:
    """An envelope from outside the mesh, admitted (`asya.admission`): round its queue once more, as
    it came, to be run as a sealed hop. No status is written for it: its record was just made."""
    phase = envelope.status.phase if envelope.status else Phase.PENDING
    return Outbound(actor, envelope.to_dict(), replace(_decided(envelope, Kind.SELF, phase), tracked=False))


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
        prev, curr, rest = [*envelope.route.prev, envelope.route.curr], on_exhausted[0], on_exhausted[1:]
        wire = _wire(envelope, route={"prev": prev, "curr": curr, "next": rest}, status=status, payload=payload)
        return Outbound(curr, wire, _decided(envelope, Kind.ACTOR, Phase.FAILED, reason, route=(prev, curr, rest)))
    return Outbound(
        SINK, _wire(envelope, status=status, payload=payload), _decided(envelope, Kind.SINK, Phase.FAILED, reason)
    )


def to_sump(envelope: Envelope, actor: str, reason: Reason, details: dict[str, Any], now: dt.datetime) -> Outbound:
    """An infrastructure error: straight to x-sump, bypassing resiliency."""
    status = _status(envelope, now, phase=Phase.FAILED.value, actor=actor, reason=reason.value, error=details)
    wire = _wire(envelope, status=status, payload=error_payload(reason, details, envelope.payload))
    return Outbound(SUMP, wire, _decided(envelope, Kind.SUMP, Phase.FAILED, reason))


def unsendable(kind: Kind, queue: str, has_queue: Callable[[str], bool]) -> bool:
    """An output for an actor with no queue in this namespace (a name in `route.next`, a handler's
    `SET .route.next` or a policy's `on_exhausted` that was never deployed) could never be sent: left
    for redelivery, its record would run again and again until SQS gave up on it."""
    return kind is _ACTOR and (len(queue) > SQS_QUEUE_NAME_MAX or not has_queue(queue))


def unknown_actor(envelope: Envelope, actor: str, queue: str, now: dt.datetime) -> Outbound:
    """What an envelope whose output is `unsendable` becomes instead: x-sump at once."""
    details = error_details(None, f"no queue {queue:.200} for an actor in this namespace")
    return to_sump(envelope, actor, Reason.UNKNOWN_ACTOR, details, now)


def raw_to_sump(
    raw: Any,
    message_id: str,
    actor: str,
    *,
    reason: Reason,
    details: dict[str, Any],
    now: dt.datetime,
    foreign: bool = False,
) -> Outbound:
    """A message that is not a valid envelope still reaches x-sump, keeping whatever can be kept.
    `foreign`: one from outside the mesh that was refused (`asya.admission`): kept under its message's
    id, its route and headers only in the original, so that it names and touches no task."""
    document = raw if isinstance(raw, dict) and not foreign else {}
    raw_id = document.get("id")
    task_id = raw_id if isinstance(raw_id, str) and raw_id else f"sqs-{message_id}"
    route = document.get("route")
    route_ok = isinstance(route, dict) and isinstance(route.get("curr"), str)
    wire = {
        "version": ENVELOPE_VERSION,  # the failure envelope's own; the message's is in its original payload
        "id": task_id,
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
    # what never parsed is not reported on any task (x-sump records it); its route is not trusted
    decision = Decision(Kind.SUMP, task_id, None, task_id, [], "", [], Phase.FAILED, reason, tracked=False)
    return Outbound(SUMP, wire, decision)


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
