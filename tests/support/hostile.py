"""A corpus of malformed and adversarial SQS message bodies for an actor named `a` whose route goes on to `b`.

Each case names what must become of the body at the first delivery: `reason` is the `status.reason` the
envelope carries where it lands (`None`: the handler ran and the envelope went on), `lands` the queue.
Bodies are text as Lambda hands them over; some hold lone surrogates, as a JSON event with a `\\ud800`
escape in a body becomes in Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

SQS_LIMIT = 1_048_576
GOOD_ROUTE = {"prev": [], "curr": "a", "next": ["b"]}
WRONG_TYPES: dict[str, Any] = {
    "null": None,
    "int": 7,
    "float": 1.5,
    "bool": True,
    "string": "text",
    "array": [1],
    "object": {"k": 1},
}


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    body: str
    reason: str | None  # `status.reason` where it lands; None: forwarded to `b`
    lands: str = "x-sump"
    # its reason when it comes from outside the mesh (no seal: the local stack's queues), if another:
    # an envelope a producer may not send is `NotAdmitted` before anything else is checked
    at_the_door: str | None = None


def envelope(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {"id": "env-h", "route": dict(GOOD_ROUTE), "headers": {}, "payload": {"n": 1}}
    document.update(changes)
    return {key: value for key, value in document.items() if value is not _MISSING}


_MISSING = object()


def text(document: Any) -> str:
    return orjson.dumps(document).decode()


def nested(depth: int) -> str:
    """A JSON array nested `depth` levels deep, as text (orjson would refuse to write it past 254)."""
    return "[" * depth + "]" * depth


def with_payload_text(payload: str, **changes: Any) -> str:
    """An envelope whose payload is given as JSON text, so it may be deeper than orjson writes."""
    return text(envelope(payload="@@", **changes)).replace('"@@"', payload, 1)


def _forwarded(name: str, body: str) -> Case:
    return Case(name, body, None, "b")


def _depths() -> Iterator[Case]:
    yield _forwarded("payload nested 200 deep", with_payload_text(nested(200)))
    yield _forwarded(
        "payload nested 253 deep (the deepest orjson writes inside an envelope)", with_payload_text(nested(253))
    )
    for depth in (254, 255, 1_000, 1_022):
        yield Case(f"payload nested {depth} deep", with_payload_text(nested(depth)), "UnserializableOutput")
    for depth in (1_024, 100_000):
        yield Case(f"payload nested {depth} deep", with_payload_text(nested(depth)), "ParseError")
    deep_header = text(envelope(headers={"h": "@@"})).replace('"@@"', nested(600), 1)
    yield Case("a header nested 600 deep", deep_header, "UnserializableOutput")
    deep_extra = text(envelope(extra="@@")).replace('"@@"', nested(600), 1)
    yield Case("an unknown top-level field nested 600 deep", deep_extra, "UnserializableOutput")
    no_id = text(envelope(id=_MISSING, payload="@@")).replace('"@@"', nested(600), 1)
    yield Case("no id, payload nested 600 deep", no_id, "InvalidEnvelope")
    yield Case("a bare array nested 300 deep", nested(300), "InvalidEnvelope")


JUST_UNDER = "payload just under the SQS limit"  # the output, a little larger, is not


def _sizes() -> Iterator[Case]:
    yield _forwarded("payload of 512 KiB", text(envelope(payload="x" * 524_288)))
    yield Case(JUST_UNDER, text(envelope(payload="x" * (SQS_LIMIT - 200))), "OversizedOutput")
    yield Case("payload over the SQS limit", text(envelope(payload="x" * (SQS_LIMIT + 10))), "OversizedOutput")
    yield Case("invalid envelope over the SQS limit", text(envelope(id=5, payload="x" * SQS_LIMIT)), "InvalidEnvelope")
    yield Case("not JSON, over the SQS limit", "x" * (SQS_LIMIT + 10), "ParseError")


def _wrong_types() -> Iterator[Case]:
    """Every envelope field (docs/spec/envelope.md) with every JSON type it must not have."""
    allowed: dict[str, tuple[str, ...]] = {
        "id": ("string",),
        "parent_id": ("null", "string"),
        "route": ("object",),
        "headers": ("object",),
        "status": ("null", "object"),
    }
    for field, ok in allowed.items():
        for kind, value in WRONG_TYPES.items():
            if kind not in ok:
                yield Case(f"{field} as {kind}", text(envelope(**{field: value})), "InvalidEnvelope")
    for part, ok in {"prev": ("array",), "curr": ("string",), "next": ("array",)}.items():
        for kind, value in WRONG_TYPES.items():
            if kind not in ok:
                route = {**GOOD_ROUTE, part: value}
                yield Case(f"route.{part} as {kind}", text(envelope(route=route)), "InvalidEnvelope")
        if part != "curr":
            route = {**GOOD_ROUTE, part: [1]}
            yield Case(f"route.{part} holding a number", text(envelope(route=route)), "InvalidEnvelope")
    status_ok: dict[str, tuple[str, ...]] = {
        "phase": ("string",),
        "actor": ("string", "null"),
        "attempt": ("int",),
        "max_attempts": ("int", "null"),
        "created_at": ("string", "null"),
        "updated_at": ("string", "null"),
        "deadline_at": ("string", "null"),
        "reason": ("string", "null"),
        "error": ("object", "null"),
    }
    for field, ok in status_ok.items():
        for kind, value in WRONG_TYPES.items():
            if kind not in ok and not (field == "phase" and kind == "null"):
                yield Case(f"status.{field} as {kind}", text(envelope(status={field: value})), "InvalidEnvelope")
    yield Case("status.phase unknown", text(envelope(status={"phase": "done"})), "InvalidEnvelope")
    yield Case("status.attempt 0", text(envelope(status={"attempt": 0})), "InvalidEnvelope")
    yield Case(
        "status.deadline_at naive", text(envelope(status={"deadline_at": "2099-01-01T00:00:00"})), "InvalidEnvelope"
    )
    yield Case("status.deadline_at not a time", text(envelope(status={"deadline_at": "tomorrow"})), "InvalidEnvelope")
    yield Case("id empty", text(envelope(id="")), "InvalidEnvelope")
    for field in ("id", "route", "payload"):
        yield Case(f"no {field}", text(envelope(**{field: _MISSING})), "InvalidEnvelope")


def _characters() -> Iterator[Case]:
    yield _forwarded("control characters in id and payload", text(envelope(id="env\x00\x1f\x7f", payload="\x00\x08\n")))
    yield _forwarded("control characters in a header key", text(envelope(headers={"k\x00": "\x1b[31m"})))
    yield _forwarded("non-BMP characters", text(envelope(id="env-🙂", payload={"🙂": "𝄞"})))
    yield Case(
        "route.curr with a control character", text(envelope(route={**GOOD_ROUTE, "curr": "a\x00"})), "RouteMismatch"
    )
    yield Case("lone surrogate escape in a string", with_payload_text('"\\ud800"'), "ParseError")
    yield Case("lone low surrogate escape", with_payload_text('"\\udc00x"'), "ParseError")
    yield Case("lone surrogate in the body itself", text(envelope()).replace('"n"', '"\ud800"'), "ParseError")
    invalid_utf8 = b'{"id": "env-h", "payload": "\xff\xfe"}'.decode("utf-8", "surrogateescape")
    yield Case("invalid UTF-8 bytes (surrogate-escaped)", invalid_utf8, "ParseError")
    yield Case("byte order mark before the object", "\ufeff" + text(envelope()), "ParseError")
    yield Case("NaN in the payload", with_payload_text("NaN"), "ParseError")
    yield Case("trailing garbage", text(envelope()) + "}", "ParseError")
    yield Case("unterminated object", text(envelope())[:-1], "ParseError")


def _duplicates_and_legacy() -> Iterator[Case]:
    good = text(envelope())
    yield Case(
        "duplicate id key, the last a number", good.replace('"id":"env-h"', '"id":"env-h","id":5'), "InvalidEnvelope"
    )
    yield _forwarded("duplicate id key, the last a string", good.replace('"id":"env-h"', '"id":5,"id":"env-h"'))
    for key in ("actors", "steps"):
        yield _forwarded(f"legacy {{{key}, current}}", text(envelope(route={key: ["a", "b"], "current": 0})))
        yield Case(
            f"legacy {key} current at the end",
            text(envelope(route={key: ["z", "a"], "current": 2})),
            "RouteMismatch",
            at_the_door="NotAdmitted",  # two positions on: a producer's starts at its route's start
        )
        for label, current in {
            "past the end": 3,
            "negative": -1,
            "a bool": True,
            "a string": "0",
            "a float": 0.0,
        }.items():
            route = {key: ["a", "b"], "current": current}
            yield Case(f"legacy {key} current {label}", text(envelope(route=route)), "InvalidEnvelope")
        yield Case(f"legacy {key} not a list", text(envelope(route={key: "a", "current": 0})), "InvalidEnvelope")
        yield Case(
            f"legacy {key} holding numbers", text(envelope(route={key: [1, 2], "current": 0})), "InvalidEnvelope"
        )
    yield Case(
        "legacy route with extra keys", text(envelope(route={"actors": ["a"], "current": 0, "x": 1})), "InvalidEnvelope"
    )
    yield Case("route naming x-sump next", text(envelope(route={**GOOD_ROUTE, "next": ["x-sump"]})), "InvalidEnvelope")
    yield Case(
        "route naming x-sink next", text(envelope(route={**GOOD_ROUTE, "next": ["b", "x-sink"]})), "InvalidEnvelope"
    )
    yield Case("route for another actor", text(envelope(route={**GOOD_ROUTE, "curr": "b"})), "RouteMismatch")


def _references() -> Iterator[Case]:
    """A claim-checked payload's reference (`asya.claims`) that can never be read: the envelope goes to
    x-sump at once, never reading anything outside the mesh's own claims."""
    gone = {"uri": "s3://asya-claims-elsewhere/claims/h/env-h/x.json", "bytes": 2, "sha256": "0" * 64}
    for label, reference in {
        "a string": "s3://bucket/key",
        "an object without a uri": {"bytes": 2},
        "another bucket's object": gone,
        "a path upwards": {**gone, "uri": "s3://b/claims/h/../../results/h/x/succeeded.json"},
    }.items():
        yield Case(f"payload_ref {label}", text(envelope(payload=None, payload_ref=reference)), "PayloadUnreadable")


def _shapes() -> Iterator[Case]:
    for label, body in {"empty": "", "whitespace": "  \n", "garbage": "not json", "half a literal": "tru"}.items():
        yield Case(f"{label} body", body, "ParseError")
    for label, body in {
        "null": "null",
        "array": "[]",
        "array of an envelope": f"[{text(envelope())}]",
        "number": "42",
        "string": '"env-h"',
        "bool": "true",
        "empty object": "{}",
    }.items():
        yield Case(f"{label} body", body, "InvalidEnvelope")
    yield Case("payload null (the handler returns None)", text(envelope(payload=None)), "Completed", "x-sink")
    yield _forwarded("payload an empty array", text(envelope(payload=[])))
    yield Case("payload an integer beyond a double", with_payload_text("1" * 400), "ParseError")
    for label, name in {"an actor with no queue": "ghost", "a name too long for a queue": "g" * 80}.items():
        yield Case(f"route.next names {label}", text(envelope(route={**GOOD_ROUTE, "next": [name]})), "UnknownActor")


CASES: list[Case] = [
    *_depths(),
    *_sizes(),
    *_wrong_types(),
    *_characters(),
    *_duplicates_and_legacy(),
    *_shapes(),
    *_references(),
]
# In a mesh that claim-checks large payloads (every deployed one, the local stack's included), an output
# over SQS's limit travels in S3 (`asya.claims`): an input that fits SQS but grows past it goes on.
CLAIM_CHECKED: list[Case] = [_forwarded(case.name, case.body) if case.name == JUST_UNDER else case for case in CASES]
