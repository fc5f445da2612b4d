"""Resiliency policies and rules (docs/actors.md, "Resiliency"): backoffs, jitter, max_duration, long
delays, on_exhausted."""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

import pytest

from asya.config import SidecarConfig
from asya.reasons import Reason
from asya.resiliency import GiveUp, Policy, Resiliency, Retry, decide
from asya.sidecar import configure
from asya.transport import MemoryTransport
from asya.variables import ConfigError
from asya_local.functions.lambda_shapes import LambdaContext, sqs_record
from tests.support import handlers
from tests.support.mesh import Mesh, envelope


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        ("constant", [2.0, 2.0, 2.0, 2.0]),
        ("linear", [2.0, 4.0, 6.0, 8.0]),
        ("exponential", [2.0, 4.0, 8.0, 16.0]),
    ],
)
def test_backoff_formulas(backoff: str, expected: list[float]) -> None:
    policy = Policy(max_attempts=10, backoff=backoff, initial_delay=2)
    assert [policy.delay_after(n) for n in (1, 2, 3, 4)] == expected


def test_max_interval_caps_the_delay() -> None:
    policy = Policy(backoff="exponential", initial_delay="1s", max_interval="5s")
    assert [policy.delay_after(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_jitter_spreads_delays_within_bounds() -> None:
    policy = Policy(backoff="constant", initial_delay=10, jitter=0.2)
    rng = random.Random(7)
    delays = [policy.delay_after(1, rng) for _ in range(200)]
    assert all(8.0 <= d <= 12.0 for d in delays)
    assert len(set(delays)) > 150
    assert Policy(jitter=True).jitter == 0.5


def test_durations_accept_units() -> None:
    policy = Policy(initial_delay="500ms", max_interval="2m", max_duration="1h")
    assert (policy.initial_delay, policy.max_interval, policy.max_duration) == (0.5, 120.0, 3600.0)


class BaseError(Exception):
    pass


class ChildError(BaseError):
    pass


def test_rules_match_in_order_along_the_mro() -> None:
    resiliency = Resiliency.model_validate(
        {
            "policies": {"fast": {"max_attempts": 2}, "slow": {"max_attempts": 5}, "default": {"max_attempts": 3}},
            "rules": [
                {"errors": ["KeyError"], "policy": "fast"},
                {"errors": [f"{__name__}.BaseError"], "policy": "slow"},
                {"errors": ["ChildError"], "policy": "fast"},
                {"errors": ["TimeoutError"], "policy": {"max_attempts": 9}},
            ],
        }
    )

    def attempts(error: Exception) -> int | None:
        policy = resiliency.policy_for(error)
        return None if policy is None else policy.max_attempts

    assert attempts(ChildError()) == 5, "first matching rule wins, via the ancestor"
    assert attempts(KeyError()) == 2
    assert attempts(TimeoutError()) == 9, "inline policy"
    assert attempts(ValueError()) == 3, "no rule: the default policy"
    assert Resiliency().policy_for(ValueError()) is None


def test_dotted_pattern_needs_the_full_name() -> None:
    resiliency = Resiliency.model_validate(
        {"policies": {"p": {"max_attempts": 4}}, "rules": [{"errors": ["other.module.ChildError"], "policy": "p"}]}
    )
    assert resiliency.policy_for(ChildError()) is None


def test_max_duration_stops_retries_even_with_attempts_left() -> None:
    policy = Policy(max_attempts=10, initial_delay=30, max_duration=60)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert decide(policy, 1, start, start + dt.timedelta(seconds=10)) == Retry(2, 30.0)
    assert decide(policy, 2, start, start + dt.timedelta(seconds=45)) == GiveUp(Reason.POLICY_EXHAUSTED, [])


def _memory_actor(handler: str, resiliency: dict[str, Any]) -> MemoryTransport:
    transport = MemoryTransport()
    variables = {
        "ASYA_NAMESPACE": "unit",
        "ASYA_ACTOR_NAME": "a",
        "ASYA_HANDLER": f"tests.support.handlers.{handler}",
        "ASYA_RESILIENCY": json.dumps(resiliency),
    }
    configure(SidecarConfig.from_env(variables), transport)
    return transport


def _deliver(body: dict[str, Any]) -> dict[str, Any]:
    import asya

    return asya.lambda_handler({"Records": [sqs_record("asya-unit-a", json.dumps(body))]}, LambdaContext("a"))


@pytest.mark.parametrize(
    ("backoff", "attempt", "delay"), [("constant", 2, 4), ("linear", 2, 8), ("exponential", 3, 16)]
)
def test_retry_is_sent_to_own_queue_with_the_policy_delay(backoff: str, attempt: int, delay: int) -> None:
    policy = {"max_attempts": 5, "backoff": backoff, "initial_delay": 4}
    transport = _memory_actor("explode", {"policies": {"default": policy}})
    first_attempt = "2099-01-01T00:00:00.000Z"
    _deliver(
        envelope(status={"phase": "retrying", "attempt": attempt}, headers={"x-asya-first-attempt": first_attempt})
    )

    [sent] = transport.queues["asya-unit-a"]
    assert sent.delay_seconds == delay
    out = json.loads(sent.body)
    assert out["status"]["phase"] == "retrying"
    assert out["status"]["attempt"] == attempt + 1
    assert out["status"]["max_attempts"] == 5
    assert out["route"] == {"prev": [], "curr": "a", "next": ["b"]}
    assert out["payload"] == {"text": "hello"}, "a retry carries the original payload"
    assert out["headers"]["x-asya-first-attempt"] == first_attempt, "kept across retries"


def test_first_attempt_is_stamped_and_max_duration_uses_it() -> None:
    transport = _memory_actor("explode", {"policies": {"default": {"max_attempts": 5, "initial_delay": 1}}})
    _deliver(envelope())
    [retry] = transport.queues["asya-unit-a"]
    stamped = json.loads(retry.body)["headers"]["x-asya-first-attempt"]
    assert dt.datetime.fromisoformat(stamped) > dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)

    transport = _memory_actor("explode", {"policies": {"default": {"max_attempts": 5, "max_duration": "10m"}}})
    long_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).isoformat()
    _deliver(envelope(status={"attempt": 2}, headers={"x-asya-first-attempt": long_ago}))
    [failed] = transport.queues["asya-unit-x-sink"]
    assert json.loads(failed.body)["status"]["reason"] == "PolicyExhausted"
    assert "asya-unit-a" not in transport.queues


def test_delays_beyond_the_sqs_cap_go_round_until_due() -> None:
    handlers.CALLS.clear()
    transport = _memory_actor("explode", {"policies": {"default": {"max_attempts": 3, "initial_delay": "40m"}}})
    _deliver(envelope())
    [retry] = transport.queues["asya-unit-a"]
    assert retry.delay_seconds == 900, "SQS caps a delay at 15 minutes"
    parked = json.loads(retry.body)
    due = dt.datetime.fromisoformat(parked["headers"]["x-asya-not-before"])
    assert dt.timedelta(minutes=39) < due - dt.datetime.now(dt.UTC) <= dt.timedelta(minutes=40)
    assert len(handlers.CALLS) == 1

    transport.queues.clear()
    _deliver(parked)
    [again] = transport.queues["asya-unit-a"]
    assert again.delay_seconds == 900, "still 25 minutes early: another full lap"
    assert json.loads(again.body) == parked, "going round changes nothing"
    assert len(handlers.CALLS) == 1, "the handler is not called before the due time"

    transport.queues.clear()
    parked["headers"]["x-asya-not-before"] = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=100)).isoformat()
    _deliver(parked)
    [last_lap] = transport.queues["asya-unit-a"]
    assert 98 <= last_lap.delay_seconds <= 100

    transport.queues.clear()
    parked["headers"]["x-asya-not-before"] = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).isoformat()
    _deliver(parked)
    assert len(handlers.CALLS) == 2, "due: the handler runs"
    [retry_two] = transport.queues["asya-unit-a"]
    assert json.loads(retry_two.body)["status"]["attempt"] == 3


def test_retries_loop_through_the_queue_until_exhausted(mesh: Mesh) -> None:
    handlers.CALLS.clear()
    mesh.actor(
        "explode", ASYA_RESILIENCY=json.dumps({"policies": {"default": {"max_attempts": 3, "initial_delay": 0}}})
    )
    mesh.deliver(envelope())
    for expected_attempt in (2, 3):
        [retry] = mesh.messages("a")
        assert retry["status"]["attempt"] == expected_attempt
        mesh.deliver(retry)
    final = mesh.only("x-sink")
    assert final["status"]["reason"] == "PolicyExhausted"
    assert final["status"]["attempt"] == 3
    assert len(handlers.CALLS) == 3


def test_rule_picks_policy_by_exception_ancestor_in_the_sidecar(mesh: Mesh) -> None:
    resiliency = {
        "policies": {"network": {"max_attempts": 4, "initial_delay": 0}},
        "rules": [{"errors": ["ConnectionError"], "policy": "network"}],
    }
    mesh.actor("flaky", ASYA_RESILIENCY=json.dumps(resiliency))
    mesh.deliver(envelope())
    assert mesh.only("a")["status"]["max_attempts"] == 4

    mesh.actor("explode", ASYA_RESILIENCY=json.dumps(resiliency))
    mesh.deliver(envelope())
    assert mesh.only("x-sink")["status"]["reason"] == "HandlerError", "ValueError matches no rule, no default"


@pytest.mark.parametrize(
    ("resiliency", "fragment"),
    [
        ("{", "ASYA_RESILIENCY is not valid JSON"),
        ('{"policies": {"default": {"backoff": "cubic"}}}', "policies.default.backoff"),
        ('{"policies": {"default": {"max_attempts": 0}}}', "policies.default.max_attempts"),
        ('{"policies": {"default": {"initial_delay": "soon"}}}', "is not a duration"),
        ('{"policies": {"default": {"retries": 3}}}', "policies.default.retries: Extra inputs"),
        ('{"rules": [{"errors": ["X"], "policy": "nope"}]}', "rules[0].policy names unknown policy 'nope'"),
        ('{"rules": [{"errors": [], "policy": {}}]}', "rules[0].errors"),
    ],
)
def test_bad_resiliency_config_names_the_field(resiliency: str, fragment: str) -> None:
    variables = {"ASYA_NAMESPACE": "n", "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "m.f", "ASYA_RESILIENCY": resiliency}
    with pytest.raises(ConfigError) as caught:
        SidecarConfig.from_env(variables)
    assert fragment in str(caught.value)
