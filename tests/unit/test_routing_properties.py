"""Properties of the routing table (docs/routing.md): for any valid envelope and any handler outcome (a value,
`None`, a generator of payloads, any exception including `BaseException`s, an overrun), the hop sends
each envelope where the table says, in a shape the next actor parses back, and only once."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asya.envelope import Envelope, Phase, parse_envelope
from asya.routing import Kind, child_id
from tests.support.properties import (
    ACTOR,
    ACTOR_NAMES,
    CONFIG,
    JSON,
    MAX_MESSAGE_BYTES,
    PROPERTY,
    envelopes,
    run_hop,
    settled,
)


class UnprintableError(Exception):
    """An error whose message cannot even be formed."""

    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class Fatal(BaseException):
    """A user's own `BaseException`, which `except Exception` does not catch."""


ERRORS = st.sampled_from(
    [
        ValueError,  # retried with a 10-minute exponential backoff
        KeyError,  # retried once, then routed to `fallback`
        RuntimeError,  # no policy: fails at once
        UnprintableError,
        SystemExit,
        GeneratorExit,
        asyncio.CancelledError,
        Fatal,
    ]
)
Handler = Callable[[Any], Any]


def _raising(error: type[BaseException]) -> Handler:
    def handler(payload: Any) -> Any:
        raise error("boom")

    return handler


def _yielding(values: list[Any], error: type[BaseException] | None) -> Handler:
    def handler(payload: Any) -> Iterator[Any]:
        yield from values
        if error is not None:
            raise error("after yielding")

    return handler


OUTCOMES: st.SearchStrategy[tuple[str, Handler]] = st.one_of(
    JSON.map(lambda value: ("none" if value is None else "value", lambda _: value)),
    st.just(("none", lambda _: None)),
    st.lists(JSON, max_size=4).map(lambda values: ("yield" if values else "none", _yielding(values, None))),
    st.tuples(st.lists(JSON, min_size=1, max_size=2), ERRORS).map(
        lambda pair: ("yield-then-raise", _yielding(pair[0], pair[1]))
    ),
    ERRORS.map(lambda error: ("raise", _raising(error))),
    st.just(("unserializable", lambda _: {"items": {1, 2}})),
    st.integers(MAX_MESSAGE_BYTES // 2, MAX_MESSAGE_BYTES * 2).map(lambda size: ("huge", lambda _: "x" * size)),
)


def _expect_forwarded(sent: Envelope, outputs: list[Envelope], count: int) -> None:
    """Output frames: the route shifted, ids as docs/actors.md gives them, each to its own new `curr`."""
    assert len(outputs) == count
    assert outputs[0].id == sent.id
    assert outputs[0].parent_id == sent.parent_id
    for index, out in enumerate(outputs):
        assert out.route.prev == [*sent.route.prev, sent.route.curr]
        assert out.route.curr == (sent.route.next[0] if sent.route.next else "")
        assert out.route.next == sent.route.next[1:]
        assert out.status is not None
        assert out.status.phase is (Phase.PROCESSING if out.route.curr else Phase.SUCCEEDED)
        if index:
            assert out.id == child_id(sent, index)
            assert out.parent_id == sent.id
    assert len({out.id for out in outputs}) == len(outputs), "fan-out ids are unique"


def _expect_unshifted(sent: Envelope, outputs: list[Envelope], phase: Phase, reason: str | None = None) -> None:
    (out,) = outputs
    assert out.id == sent.id
    assert out.status is not None
    assert out.status.phase is phase
    if reason is not None:
        assert out.status.reason == reason
    if out.status.reason != "PolicyRouted":
        assert out.route == sent.route


@PROPERTY
@given(envelopes(), OUTCOMES)
def test_any_envelope_and_any_handler_outcome_is_routed_by_the_table(
    document: dict[str, Any], outcome: tuple[str, Handler]
) -> None:
    kind, handler = outcome
    body = orjson.dumps(document).decode()
    sent = parse_envelope(body)
    (plan,) = run_hop(handler, body)
    outputs = settled(plan, sent)
    first = plan.outbound[0]
    if first.kind is Kind.SELF or (sent.status and sent.status.deadline_at and first.kind is Kind.SINK):
        return  # early for its retry, or out of time before the handler ran: not the handler's outcome
    if kind == "none":
        _expect_unshifted(sent, outputs, Phase.SUCCEEDED, "Completed")
    elif kind in ("value", "yield"):
        _expect_forwarded(sent, outputs, 1 if kind == "value" else len(outputs))
    elif kind in ("unserializable", "huge") and first.kind is Kind.SUMP:
        _expect_unshifted(sent, outputs, Phase.FAILED)
    elif kind in ("raise", "yield-then-raise"):
        assert first.kind in (Kind.SINK, Kind.SUMP, Kind.ACTOR)
        _expect_unshifted(sent, outputs, Phase.FAILED)


@PROPERTY
@given(envelopes(), st.lists(JSON, max_size=2), ERRORS)
def test_any_handler_error_ends_in_one_failure_or_retry(
    document: dict[str, Any], yielded: list[Any], error: type[BaseException]
) -> None:
    """Whatever the handler yielded before it raised is not sent: the hop's one outcome is the error's."""
    body = orjson.dumps(document).decode()
    sent = parse_envelope(body)
    (plan,) = run_hop(_yielding(yielded, error), body)
    (out,) = settled(plan, sent)
    if out.status is None:
        return  # early for a retry due later: it goes round its queue, the handler is not run
    assert out.id == sent.id
    if out.status.phase is Phase.FAILED and out.status.reason not in ("Timeout", "PolicyRouted"):
        assert out.status.error is not None
        assert out.status.error["type"] == error.__name__
        if not issubclass(error, Exception):
            assert out.status.reason == "RuntimeCrash"
            assert plan.outbound[0].kind is Kind.SUMP


@PROPERTY
@given(envelopes(), st.lists(JSON, min_size=2, max_size=5))
def test_fan_out_ids_are_the_same_when_the_hop_runs_again(document: dict[str, Any], values: list[Any]) -> None:
    body = orjson.dumps(document).decode()
    first, again = (run_hop(_yielding(values, None), body)[0] for _ in range(2))
    assert [out.wire["id"] for out in first.outbound] == [out.wire["id"] for out in again.outbound]


@PROPERTY
@given(envelopes(), OUTCOMES)
def test_a_repeat_in_the_same_batch_is_dropped_and_follows_the_first(
    document: dict[str, Any], outcome: tuple[str, Handler]
) -> None:
    body = orjson.dumps(document).decode()
    first, repeat = run_hop(outcome[1], body, body)
    settled(first, parse_envelope(body))
    if first.key is not None:  # the first delivery claimed the hop
        assert repeat.outbound == []
        assert repeat.follows == "m-0"


@PROPERTY
@given(envelopes(ACTOR_NAMES.filter(lambda name: name != ACTOR)), OUTCOMES)
def test_an_envelope_for_another_actor_goes_to_sump_untouched(
    document: dict[str, Any], outcome: tuple[str, Handler]
) -> None:
    body = orjson.dumps(document).decode()
    sent = parse_envelope(body)
    (plan,) = run_hop(outcome[1], body)
    (out,) = settled(plan, sent)
    assert out.status is not None
    assert out.status.reason == "RouteMismatch"
    assert out.route == sent.route
    assert out.payload["original_payload"] == sent.payload


def _overrunning(payload: Any) -> Any:
    time.sleep(2)  # well past the actor's limit
    return payload


@PROPERTY.__class__(PROPERTY, max_examples=10)
@given(envelopes())
def test_a_handler_that_overruns_goes_to_sump_at_once(document: dict[str, Any]) -> None:
    body = orjson.dumps(document).decode()
    sent = parse_envelope(body)
    (plan,) = run_hop(_overrunning, body, config=dataclasses.replace(CONFIG, actor_timeout=0.02))
    (out,) = settled(plan, sent)
    if plan.outbound[0].kind is Kind.SUMP:
        assert out.status is not None
        assert out.status.reason == "HandlerTimeout"
        assert out.route == sent.route


def test_keyboard_interrupt_stops_the_process_and_leaves_the_record_for_redelivery() -> None:
    """Ctrl-C (or SIGINT) is the operator stopping the process, not the handler's outcome."""
    body = orjson.dumps({"id": "e", "route": {"prev": [], "curr": ACTOR, "next": []}, "payload": 1}).decode()
    with pytest.raises(KeyboardInterrupt):
        run_hop(_raising(KeyboardInterrupt), body)
