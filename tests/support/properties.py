"""Strategies and invariants shared by the property tests of routing and the ABI.

`settled` is the contract of one hop (docs/routing.md, issue "Nothing lost, nothing looping"): whatever the
envelope and whatever the handler did, the hop either sends envelopes that the next actor can parse
back, each where the routing table says and carrying the fields the envelope requires
(docs/spec/envelope.md), or drops a duplicate of a hop already run in the same batch. Hypothesis runs
derandomized, so CI sees the same examples.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from asya.config import SidecarConfig
from asya.dedup import HopLedger
from asya.envelope import Envelope, Phase, parse_envelope
from asya.hop import HopPlan, HopRunner
from asya.routing import Kind
from asya.telemetry import Telemetry
from asya.transport import SQS_MAX_DELAY_SECONDS

ACTOR = "a"
MAX_MESSAGE_BYTES = 32_768  # small, so that oversized outputs are cheap to make; room for an error's traceback
PROPERTY = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NOW = dt.datetime.now(dt.UTC)

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ACTOR_NAMES = st.sampled_from(["a", "b", "c", "fallback", "x-pause", "Big_1"]) | st.from_regex(
    r"\A[a-z0-9][a-z0-9_-]{0,10}\Z"
).filter(lambda name: name not in ("x-sink", "x-sump"))


def _moment(offset_hours: float) -> str:
    return (NOW + dt.timedelta(hours=offset_hours)).isoformat()


TIMESTAMPS = st.floats(-48, 48).map(_moment)
HEADERS = st.dictionaries(
    st.text(max_size=10) | st.sampled_from(["traceparent", "x-asya-first-attempt", "x-asya-not-before"]),
    JSON | TIMESTAMPS | st.just("00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"),
    max_size=4,
)
STATUS = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from([phase.value for phase in Phase]),
        "actor": ACTOR_NAMES,
        "attempt": st.integers(1, 6),
        "max_attempts": st.integers(1, 6),
        "created_at": TIMESTAMPS,
        "deadline_at": TIMESTAMPS,
        "note": JSON,
    },
)


@st.composite
def envelopes(draw: st.DrawFn, curr: st.SearchStrategy[str] | None = None) -> dict[str, Any]:
    """Valid envelopes addressed to `curr` (this actor unless told), with any route, headers and status."""
    document: dict[str, Any] = {
        "id": draw(st.text(min_size=1, max_size=12)),
        "route": {
            "prev": draw(st.lists(ACTOR_NAMES, max_size=3)),
            "curr": ACTOR if curr is None else draw(curr),
            "next": draw(st.lists(ACTOR_NAMES, max_size=3)),
        },
        "payload": draw(JSON),
    }
    if draw(st.booleans()):
        document["parent_id"] = draw(st.text(min_size=1, max_size=12))
    if draw(st.booleans()):
        document["headers"] = draw(HEADERS)
    if draw(st.booleans()):
        document["status"] = draw(STATUS)
    return document


RESILIENCY = (
    '{"policies": {"retry": {"max_attempts": 3, "backoff": "exponential", "initial_delay": "10m"},'
    ' "routed": {"max_attempts": 2, "on_exhausted": ["fallback", "c"]}},'
    ' "rules": [{"errors": ["ValueError"], "policy": "retry"}, {"errors": ["KeyError"], "policy": "routed"}]}'
)
CONFIG = SidecarConfig.from_env(
    {
        "ASYA_NAMESPACE": "unit",
        "ASYA_ACTOR_NAME": ACTOR,
        "ASYA_HANDLER": "tests.support.handlers.echo",
        "ASYA_RESILIENCY": RESILIENCY,
        "ASYA_MAX_MESSAGE_BYTES": str(MAX_MESSAGE_BYTES),
    }
)
TELEMETRY = Telemetry("unit", ACTOR)


def run_hop(handler: Callable[[Any], Any], *bodies: str, config: SidecarConfig = CONFIG) -> list[HopPlan]:
    """One batch of records through a fresh hop pipeline (its own duplicate ledger) with `handler`."""
    runner = HopRunner(config, handler, HopLedger(), TELEMETRY)
    runner.ledger.start_batch()
    return [runner.run(f"m-{index}", body, None) for index, body in enumerate(bodies)]


_TERMINAL = {Phase.SUCCEEDED, Phase.FAILED, Phase.CANCELED, Phase.PAUSED}
_SUMP_REASONS = {
    "ParseError",
    "InvalidEnvelope",
    "RouteMismatch",
    "HandlerTimeout",
    "UnserializableOutput",
    "OversizedOutput",
    "FanOutTooWide",
    "UnjoinedFanOut",
    "RuntimeCrash",
}


def settled(plan: HopPlan, sent: Envelope) -> list[Envelope]:
    """Check one record's plan against the routing table's invariants; return what it sends, parsed."""
    assert not plan.redeliver, "a record with time to run is never left for redelivery"
    assert len(plan.bodies) == len(plan.outbound) >= 1, "every envelope goes somewhere"
    outputs = [parse_envelope(body) for body in plan.bodies]
    for outbound, body, out in zip(plan.outbound, plan.bodies, outputs, strict=True):
        assert len(body.encode()) <= MAX_MESSAGE_BYTES, f"{outbound.kind} body over the SQS limit"
        assert 0 <= outbound.delay <= SQS_MAX_DELAY_SECONDS
        if outbound.kind is Kind.SELF and outbound.wire == sent.to_dict():
            assert len(outputs) == 1, "an envelope early for its retry goes round its queue as it came"
            continue
        assert out.status is not None
        assert out.status.updated_at is not None
        if outbound.kind is Kind.SUMP:
            assert outbound.destination == "x-sump"
            assert out.status.phase is Phase.FAILED
            assert out.status.reason in _SUMP_REASONS
        elif outbound.kind is Kind.SINK:
            assert outbound.destination == "x-sink"
            assert out.status.phase in _TERMINAL
            assert out.status.reason
        else:
            assert outbound.destination == out.route.curr not in ("", "x-sink", "x-sump")
        if out.status.phase is Phase.FAILED:
            assert set(out.payload) == {"error", "details", "original_payload"}
            assert out.status.error == out.payload["details"]
            assert len(outputs) == 1, "a failure is the one outcome of its hop"
        if outbound.kind is Kind.SELF:
            assert outbound.destination == ACTOR
            assert len(outputs) == 1
            assert out.route == sent.route
            attempt = sent.status.attempt if sent.status else 1
            assert out.status.phase is Phase.RETRYING
            assert out.status.attempt == attempt + 1, "attempts only grow"
    return outputs
