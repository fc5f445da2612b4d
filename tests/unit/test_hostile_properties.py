"""Properties: any JSON value or any text as a message body gets an outcome from the hop pipeline,
which never raises and always has a written body for each envelope it sends."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from asya.config import SidecarConfig
from asya.dedup import HopLedger
from asya.hop import HopRunner
from asya.telemetry import Telemetry
from tests.support import handlers

RUNNER = HopRunner(
    SidecarConfig.from_env(
        {"ASYA_NAMESPACE": "unit", "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "tests.support.handlers.echo"}
    ),
    handlers.echo,
    HopLedger(),
    Telemetry("unit", "a"),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _settled(body: str) -> None:
    RUNNER.ledger.start_batch()
    plan = RUNNER.run("m-1", body, None)
    assert not plan.redeliver
    assert len(plan.bodies) == len(plan.outbound) >= 1
    for sent in plan.bodies:
        assert isinstance(orjson.loads(sent), dict)


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_any_json_value_as_a_body_is_settled(value: object) -> None:
    _settled(orjson.dumps(value).decode())


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_any_json_value_as_a_payload_is_settled(value: object) -> None:
    _settled(orjson.dumps({"id": "p", "route": {"prev": [], "curr": "a", "next": ["b"]}, "payload": value}).decode())


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_as_a_body_are_settled(raw: bytes) -> None:
    _settled(raw.decode("utf-8", "surrogateescape"))
