"""Properties of the handler ABI (docs/actors.md): any sequence of GET/SET/DEL/FLY on any path, with values of
any JSON type (deeply nested, huge, not JSON at all), either gives outputs the next actor parses back
or an `AbiError` raised in the handler at the offending `yield`. The hop itself never raises."""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from asya.abi import AbiError
from asya.envelope import Phase, parse_envelope
from tests.support.properties import (
    ACTOR_NAMES,
    CONFIG,
    JSON,
    MAX_MESSAGE_BYTES,
    PROPERTY,
    TIMESTAMPS,
    envelopes,
    run_hop,
    settled,
)

PATHS = st.sampled_from(
    [
        ".route.next",
        ".route.next[0]",
        ".route.next[-1]",
        ".route.next[:0]",
        ".route.next[999:]",
        ".route.next[1:2]",
        ".route.next[5]",
        ".route.next.x",
        ".route.curr",
        ".route.prev",
        ".route.prev[0]",
        ".route",
        ".id",
        ".parent_id",
        ".headers",
        ".headers.k",
        '.headers["a.b"]',
        ".headers.traceparent",
        ".headers.x-asya-not-before",
        ".headers.x-asya-first-attempt",
        ".headers[0]",
        ".status",
        ".status.phase",
        ".status.attempt",
        ".status.max_attempts",
        ".status.created_at",
        ".status.deadline_at",
        ".status.reason",
        ".status.error",
        ".status.note",
        ".status.a.b",
        ".payload",
        ".payload.x",
        ".payload[0]",
        "",
        "route.next",
    ]
) | st.text(max_size=12)


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


NEXT_PATHS = st.sampled_from(
    [".route.next", ".route.next[0]", ".route.next[:0]", ".route.next[999:]", ".route.next[1:]"]
)
STATUS_PATHS = st.sampled_from(
    [".status.phase", ".status.attempt", ".status.created_at", ".status.deadline_at", ".status.reason", ".status.error"]
)
NAMES = ACTOR_NAMES | st.sampled_from(["x-sink", "x-sump", "", "two words", "a/b", "ü"])
VALUES = (
    JSON
    | NAMES
    | st.lists(NAMES, max_size=3)
    | st.integers(1, 300).map(_nested)
    | st.integers(100, MAX_MESSAGE_BYTES * 2).map(lambda size: "y" * size)
    | st.sampled_from([{1, 2}, object(), b"bytes", float("nan")])
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("GET"), PATHS),
        st.tuples(st.just("SET"), PATHS, VALUES),
        st.tuples(st.just("SET"), NEXT_PATHS, NAMES | st.lists(NAMES, max_size=3)),
        st.tuples(st.just("SET"), STATUS_PATHS, VALUES | TIMESTAMPS),
        st.tuples(st.just("DEL"), PATHS),
        st.tuples(st.just("FLY"), VALUES),
        st.tuples(st.just("EMIT"), JSON),
        st.sampled_from([("GET",), ("SET", ".headers.k"), ("DEL", ".headers.k", 1), ("FLY",), ("GET", 5)]),
    ),
    max_size=8,
).map(lambda operations: [*operations, ("EMIT", "last")])


class Script:
    """A generator handler that runs a sequence of operations, noting what the sidecar raised in it."""

    def __init__(self, operations: list[tuple[Any, ...]], catch: bool) -> None:
        self.operations = operations
        self.catch = catch
        self.raised: list[BaseException] = []
        self.emitted: list[tuple[list[str], dict[str, Any]]] = []  # route.next and headers at each output

    def __call__(self, payload: Any) -> Generator[Any, Any, None]:
        for operation in self.operations:
            if operation[0] == "EMIT":
                self.emitted.append(((yield ("GET", ".route.next")), (yield ("GET", ".headers"))))
                yield operation[1]
                continue
            try:
                yield operation
            except Exception as exc:
                self.raised.append(exc)
                if not self.catch:
                    raise


@PROPERTY
@given(envelopes(), OPERATIONS, st.booleans())
def test_any_sequence_of_verbs_gives_parseable_outputs_or_an_abi_error(
    document: dict[str, Any], operations: list[tuple[Any, ...]], catch: bool
) -> None:
    body = orjson.dumps(document).decode()
    sent = parse_envelope(body)
    script = Script(operations, catch)
    (plan,) = run_hop(script, body)
    outputs = settled(plan, sent)
    assert all(isinstance(error, AbiError) for error in script.raised), "the sidecar raises only AbiError"
    assert all(str(error) for error in script.raised), "every AbiError says what was wrong"
    if script.raised and not catch:
        (out,) = outputs
        assert out.payload["details"]["type"] == "AbiError"
        return
    if outputs[0].route == sent.route:
        return  # not forwarded: oversized or unserializable output, early for a retry, out of time
    assert len(outputs) == len(script.emitted)
    for out, (upcoming, headers) in zip(outputs, script.emitted, strict=True):
        assert [out.route.curr, *out.route.next] == (upcoming or [""]), "each output keeps the route of its moment"
        kept = {key: value for key, value in headers.items() if not key.startswith(("traceparent", "x-asya-"))}
        assert kept.items() <= out.headers.items(), "and its headers"


ENVELOPE_FIELDS = st.sampled_from(
    [("route", "next"), ("route", "curr"), ("route", "prev"), ("id",), ("parent_id",), ("headers",), ("status",)]
    + [("status", key) for key in ("attempt", "phase", "created_at", "deadline_at", "reason", "error", "note")]
    + [("headers", "k"), ("payload",)]
)


@PROPERTY
@given(envelopes(), st.lists(st.tuples(ENVELOPE_FIELDS, VALUES | st.lists(NAMES, max_size=3)), max_size=4))
def test_any_envelope_an_envelope_mode_handler_returns_is_forwarded_or_an_abi_error(
    document: dict[str, Any], changes: list[tuple[tuple[str, ...], Any]]
) -> None:
    def handler(envelope: dict[str, Any]) -> dict[str, Any]:
        for path, value in changes:
            target = envelope.setdefault(path[0], {}) if len(path) == 2 else envelope
            if isinstance(target, dict):  # an earlier change may have made it something else
                target[path[-1]] = value
        return envelope

    body = orjson.dumps(document).decode()
    sent = parse_envelope(body)
    (plan,) = run_hop(handler, body, config=dataclasses.replace(CONFIG, handler_mode="envelope"))
    (out,) = settled(plan, sent)
    if out.route == sent.route and out.status is not None and out.status.phase is Phase.FAILED:
        decided_by_the_hop = out.status.reason in ("UnserializableOutput", "OversizedOutput", "Timeout")
        assert decided_by_the_hop or out.payload["details"]["type"] == "AbiError"
