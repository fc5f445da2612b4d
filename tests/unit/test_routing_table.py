"""Every row of the routing table (docs/routing.md), observed as envelopes landing in queues."""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid

import pytest

from asya.envelope import ENVELOPE_VERSION, new_envelope
from tests.support import handlers
from tests.support.mesh import Mesh, envelope

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


def test_output_with_next_goes_to_next_actor_with_route_shifted(mesh: Mesh) -> None:
    mesh.actor("enrich")
    headers = {"trace_id": "t-42", "traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"}
    response = mesh.deliver(envelope(next=("b", "c"), headers=headers))

    assert response == {"batchItemFailures": []}
    out = mesh.only("b")
    assert out["id"] == "env-1"
    assert out["route"] == {"prev": ["a"], "curr": "b", "next": ["c"]}
    assert out["payload"] == {"text": "hello", "seen": True}
    assert out["status"]["phase"] == "processing"
    assert out["status"]["actor"] == "b"
    assert out["status"]["attempt"] == 1
    assert out["headers"]["trace_id"] == "t-42"
    trace = TRACEPARENT.match(out["headers"]["traceparent"])
    assert trace is not None
    assert trace.group(1) == "ab" * 16, "the trace id is continued"
    assert trace.group(2) != "cd" * 8, "each hop is a new span"
    assert "x-asya-first-attempt" not in out["headers"], "first-attempt belongs to one actor's attempts"
    mesh.assert_empty("a", "x-sink", "x-sump")


def test_output_with_empty_next_goes_to_sink_succeeded(mesh: Mesh) -> None:
    mesh.actor("enrich")
    mesh.deliver(envelope(next=()))

    out = mesh.only("x-sink")
    assert out["route"] == {"prev": ["a"], "curr": "", "next": []}
    assert out["status"]["phase"] == "succeeded"
    assert out["status"]["reason"] == "Completed"
    assert out["payload"] == {"text": "hello", "seen": True}


def test_none_goes_to_sink_unshifted_and_unchanged(mesh: Mesh) -> None:
    mesh.actor("nothing")
    mesh.deliver(envelope(payload={"keep": [1, None]}, next=("b", "c")))

    out = mesh.only("x-sink")
    assert out["route"] == {"prev": [], "curr": "a", "next": ["b", "c"]}
    assert out["payload"] == {"keep": [1, None]}
    assert out["status"]["phase"] == "succeeded"
    assert out["status"]["reason"] == "Completed"
    mesh.assert_empty("b")


def test_returned_list_is_one_payload(mesh: Mesh) -> None:
    mesh.actor("as_list")
    mesh.deliver(envelope())
    assert mesh.only("b")["payload"] == [1, 2, 3]


def test_fan_out_first_keeps_id_others_get_uuid4_and_parent_id(mesh: Mesh) -> None:
    mesh.actor("fan_out")
    mesh.deliver(envelope(payload={"items": ["x", "y", "z"]}, parent_id="root-0"))

    outs = sorted(mesh.messages("b"), key=lambda e: e["payload"]["item"])
    assert [o["payload"]["item"] for o in outs] == ["x", "y", "z"]
    first, *children = outs
    assert first["id"] == "env-1"
    assert first["parent_id"] == "root-0", "the first output is the input envelope, moved on"
    assert len({child["id"] for child in children}) == 2
    for child in children:
        assert uuid.UUID(child["id"]).version == 4
        assert child["parent_id"] == "env-1"
        assert child["route"] == {"prev": ["a"], "curr": "b", "next": []}


def test_fan_out_children_are_routed_independently_by_captured_route(mesh: Mesh) -> None:
    mesh.actor("reroute")
    mesh.deliver(envelope(next=("b",)))

    to_b = mesh.messages("b")
    to_c = mesh.messages("c")
    to_sink = mesh.messages("x-sink")
    assert [e["payload"] for e in to_b] == [{"n": 1}]
    assert [e["payload"] for e in to_c] == [{"n": 2}]
    assert to_c[0]["route"] == {"prev": ["a"], "curr": "c", "next": ["b"]}
    assert [e["payload"] for e in to_sink] == [{"n": 3}]
    assert to_sink[0]["status"]["phase"] == "succeeded"


def test_empty_generator_is_like_none(mesh: Mesh) -> None:
    mesh.actor("empty_generator")
    mesh.deliver(envelope())
    out = mesh.only("x-sink")
    assert out["route"]["curr"] == "a"
    assert out["status"]["phase"] == "succeeded"


def test_error_without_policy_fails_to_sink_with_error_payload(mesh: Mesh) -> None:
    mesh.actor("explode")
    mesh.deliver(envelope(payload={"n": 7}))

    out = mesh.only("x-sink")
    assert out["route"] == {"prev": [], "curr": "a", "next": ["b"]}
    assert out["status"]["phase"] == "failed"
    assert out["status"]["reason"] == "HandlerError"
    assert out["payload"]["error"] == "handler_error"
    assert out["payload"]["original_payload"] == {"n": 7}
    details = out["payload"]["details"]
    assert details["type"] == "ValueError"
    assert "builtins.ValueError" in details["mro"]
    assert "bad input" in details["message"]
    assert "Traceback" in details["traceback"]
    assert out["status"]["error"] == details
    mesh.assert_empty("b", "x-sump")


def test_error_with_retry_policy_goes_back_to_own_queue_delayed(mesh: Mesh) -> None:
    policies = {"policies": {"default": {"max_attempts": 3, "initial_delay": 5}}}
    mesh.actor("explode", ASYA_RESILIENCY=json.dumps(policies))
    mesh.deliver(envelope())

    assert mesh.messages("a") == [], "the retry is delayed, not visible yet"
    assert mesh.delayed("a") == 1
    mesh.assert_empty("x-sink", "x-sump", "b")


def test_policy_exhausted_fails_to_sink(mesh: Mesh) -> None:
    mesh.actor("explode", ASYA_RESILIENCY=json.dumps({"policies": {"default": {"max_attempts": 3}}}))
    retrying = envelope(status={"phase": "retrying", "attempt": 3, "max_attempts": 3})
    mesh.deliver(retrying)

    out = mesh.only("x-sink")
    assert out["status"]["phase"] == "failed"
    assert out["status"]["reason"] == "PolicyExhausted"
    assert out["status"]["attempt"] == 3


def test_policy_exhausted_with_on_exhausted_routes_to_fallback(mesh: Mesh) -> None:
    resiliency = {"policies": {"default": {"max_attempts": 1, "on_exhausted": ["fallback", "c"]}}}
    mesh.actor("explode", ASYA_RESILIENCY=json.dumps(resiliency))
    mesh.deliver(envelope(next=("b",)))

    out = mesh.only("fallback")
    assert out["route"] == {"prev": ["a"], "curr": "fallback", "next": ["c"]}
    assert out["status"]["phase"] == "failed"
    assert out["status"]["reason"] == "PolicyRouted"
    assert out["payload"]["original_payload"] == {"text": "hello"}
    mesh.assert_empty("b", "x-sink")


def test_deadline_passed_fails_with_timeout_without_calling_handler(mesh: Mesh) -> None:
    handlers.CALLS.clear()
    mesh.actor("nothing")
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).isoformat()
    mesh.deliver(envelope(status={"phase": "processing", "deadline_at": past}))

    out = mesh.only("x-sink")
    assert out["status"]["phase"] == "failed"
    assert out["status"]["reason"] == "Timeout"
    assert out["payload"]["error"] == "timeout"
    assert handlers.CALLS == []


@pytest.mark.parametrize(
    ("body", "reason", "fragment"),
    [
        ("{not json", "ParseError", "not valid JSON"),
        ("[1, 2]", "InvalidEnvelope", "must be a JSON object"),
        ('"just a string"', "InvalidEnvelope", "must be a JSON object"),
        (json.dumps({"route": {"curr": "a"}, "payload": 1}), "InvalidEnvelope", "id: Field required"),
        (json.dumps({"id": "", "route": {"curr": "a"}, "payload": 1}), "InvalidEnvelope", "id: String should have"),
        (
            json.dumps({"id": 5, "route": {"curr": "a"}, "payload": 1}),
            "InvalidEnvelope",
            "id: Input should be a valid string",
        ),
        (json.dumps({"id": "e", "payload": 1}), "InvalidEnvelope", "route: Field required"),
        (json.dumps({"id": "e", "route": {"curr": "a"}}), "InvalidEnvelope", "payload: Field required"),
        (json.dumps({"id": "e", "route": {"curr": "a", "next": "b"}, "payload": 1}), "InvalidEnvelope", "route.next"),
        (json.dumps({"id": "e", "route": {"curr": "a"}, "headers": [], "payload": 1}), "InvalidEnvelope", "headers"),
        (
            json.dumps({"id": "e", "route": {"curr": "a"}, "status": {"phase": "lost"}, "payload": 1}),
            "InvalidEnvelope",
            "status.phase",
        ),
        (json.dumps({"id": "e", "route": {"actors": ["a"], "current": 4}, "payload": 1}), "InvalidEnvelope", "outside"),
    ],
)
def test_malformed_bodies_go_to_sump_with_reason(mesh: Mesh, body: str, reason: str, fragment: str) -> None:
    mesh.actor("enrich")
    response = mesh.deliver(body)

    assert response == {"batchItemFailures": []}, "a malformed envelope is routed, never retried"
    out = mesh.only("x-sump")
    assert out["status"]["reason"] == reason
    assert out["status"]["phase"] == "failed"
    assert fragment in out["payload"]["details"]["message"]
    original = out["payload"]["original_payload"]
    assert original == (body if reason == "ParseError" else json.loads(body)), "the input is kept"
    mesh.assert_empty("b", "x-sink")


def test_an_envelope_of_a_newer_version_goes_to_sump_whole_naming_its_version(mesh: Mesh) -> None:
    """A later release's envelope may mean by its fields what this sidecar cannot know: it is not run,
    and x-sump keeps it whole, to be redriven once the mesh reads its version."""
    mesh.actor("enrich")
    newer = envelope(version=ENVELOPE_VERSION + 1, novel={"meaning": "unknown here"})
    assert mesh.deliver(json.dumps(newer)) == {"batchItemFailures": []}, "routed, never retried"

    out = mesh.only("x-sump")
    assert (out["status"]["phase"], out["status"]["reason"]) == ("failed", "NewerVersion")
    assert out["payload"]["details"]["message"] == (
        f"version: envelope version {ENVELOPE_VERSION + 1} is newer than this sidecar reads (up to version "
        f"{ENVELOPE_VERSION}); upgrade asya-aws, then redrive it from x-sump"
    )
    assert out["payload"]["original_payload"] == newer, "nothing of it is lost"
    assert (out["id"], out["route"], out["version"]) == ("env-1", newer["route"], ENVELOPE_VERSION)
    mesh.assert_empty("b", "x-sink")


@pytest.mark.parametrize("version", [None, ENVELOPE_VERSION])
def test_an_envelope_without_a_version_is_version_1_and_goes_on_with_it(mesh: Mesh, version: int | None) -> None:
    """Older producers write no version: theirs are version 1, and what a hop sends says so."""
    mesh.actor("enrich")
    sent = envelope()
    if version is not None:
        sent["version"] = version
    mesh.deliver(sent)
    assert mesh.only("b")["version"] == ENVELOPE_VERSION == 1


def test_a_new_envelope_carries_its_version() -> None:
    """What the gateway and the in-process mesh start a task with (`new_envelope`, the one builder)."""
    assert new_envelope("t-1", ["a", "b"], {"n": 1})["version"] == ENVELOPE_VERSION


def test_route_mismatch_goes_to_sump(mesh: Mesh) -> None:
    mesh.actor("enrich")
    mesh.deliver(envelope(curr="b", next=("c",)))

    out = mesh.only("x-sump")
    assert out["status"]["reason"] == "RouteMismatch"
    assert out["payload"]["error"] == "route_mismatch"
    assert "'b'" in out["payload"]["details"]["message"]
    assert out["route"] == {"prev": [], "curr": "b", "next": ["c"]}


def test_unserializable_output_goes_to_sump(mesh: Mesh) -> None:
    mesh.actor("unserializable")
    mesh.deliver(envelope(payload={"n": 1}))
    out = mesh.only("x-sump")
    assert out["status"]["reason"] == "UnserializableOutput"
    assert out["payload"]["original_payload"] == {"n": 1}
    mesh.assert_empty("b")


def test_output_near_the_size_limit_is_sent_and_just_over_goes_to_sump(mesh: Mesh) -> None:
    limit = 64 * 1024
    mesh.actor("huge", ASYA_MAX_MESSAGE_BYTES=str(limit))
    mesh.deliver(envelope(payload={"size": limit - 600}))
    assert len(mesh.only("b")["payload"]["blob"]) == limit - 600

    mesh.deliver(envelope(payload={"size": limit}))
    out = mesh.only("x-sump")
    assert out["status"]["reason"] == "OversizedOutput"
    assert f"over the {limit}-byte" in out["payload"]["details"]["message"]
    mesh.assert_empty("b")


def test_a_fan_out_too_wide_for_the_time_left_goes_to_sump_saying_so(mesh: Mesh) -> None:
    """A fan-out one invocation could not register and send in time fails at once with the reason,
    instead of timing out on every delivery until SQS redrives it; with the time, it is sent."""
    mesh.actor("fan_out")
    items = list(range(400))  # 2 s at 5 ms a branch
    mesh.deliver(envelope(payload={"items": items}), timeout=3.5)  # 1.5 s left after the 2 s margin
    out = mesh.only("x-sump")
    assert out["status"]["reason"] == "FanOutTooWide"
    assert "400 outputs" in out["payload"]["details"]["message"]
    assert "function_timeout" in out["payload"]["details"]["message"]
    mesh.assert_empty("b")

    mesh.deliver(envelope(payload={"items": items}), timeout=5.0)
    assert len(mesh.messages("b")) == 400
    mesh.assert_empty("x-sump")


def test_failure_of_an_input_at_the_real_sqs_limit_keeps_the_error(mesh: Mesh) -> None:
    """The error envelope around a ~1 MiB payload cannot fit: error kept, payload previewed."""
    mesh.actor("explode")
    big = {"blob": "x" * 1_047_000}
    response = mesh.deliver(envelope(payload=big))

    assert response == {"batchItemFailures": []}
    out = mesh.only("x-sink")
    assert out["status"]["reason"] == "HandlerError"
    assert out["payload"]["details"]["type"] == "ValueError"
    assert out["payload"]["original_payload"]["truncated"] is True
    assert out["payload"]["original_payload"]["preview"].startswith('{"blob":"xxx')


def test_payload_just_under_the_real_sqs_limit_travels(mesh: Mesh) -> None:
    mesh.actor("nothing")
    big = {"blob": "x" * 1_047_000}
    mesh.deliver(envelope(payload=big))
    assert mesh.only("x-sink")["payload"] == big


def test_sump_envelope_over_the_limit_keeps_error_and_previews_payload(mesh: Mesh) -> None:
    limit = 16 * 1024
    mesh.actor("enrich", ASYA_MAX_MESSAGE_BYTES=str(limit))
    mesh.deliver(envelope(curr="b", payload={"blob": "y" * limit}))

    out = mesh.only("x-sump")
    assert out["status"]["reason"] == "RouteMismatch"
    assert out["payload"]["original_payload"]["truncated"] is True
    assert out["payload"]["original_payload"]["preview"].startswith('{"blob":"yyy')


def test_a_batch_mixing_good_and_bad_records_routes_each(mesh: Mesh) -> None:
    mesh.actor("enrich")
    bodies = [
        envelope(id="good-1"),
        "garbage",
        envelope(id="wrong-actor", curr="c"),
        envelope(id="good-2", next=()),
        {"id": "no-route", "payload": 1},
    ]
    response = mesh.deliver(*bodies)

    assert response == {"batchItemFailures": []}
    assert [e["id"] for e in mesh.messages("b")] == ["good-1"]
    assert [e["id"] for e in mesh.messages("x-sink")] == ["good-2"]
    sump = mesh.messages("x-sump")
    assert sorted(e["status"]["reason"] for e in sump) == ["InvalidEnvelope", "ParseError", "RouteMismatch"]
    assert {e["id"] for e in sump} >= {"wrong-actor", "no-route"}


def test_unicode_nulls_and_deep_nesting_survive_a_hop(mesh: Mesh) -> None:
    deep: object = {"leaf": None}
    for level in range(20):
        deep = {f"level-{level}": [deep, None]}
    payload = {"text": "héllo 世界 🚀 \u0000 \u2028", "none": None, "deep": deep, "empty": {}, "zero": 0}
    mesh.actor("enrich")
    mesh.deliver(envelope(payload=payload, headers={"note": "ünïcödé"}))

    out = mesh.only("b")
    assert out["payload"] == {**payload, "seen": True}
    assert out["headers"]["note"] == "ünïcödé"


def test_unknown_top_level_fields_travel_on(mesh: Mesh) -> None:
    mesh.actor("enrich")
    mesh.deliver(envelope(job_ref="legacy-42"))
    assert mesh.only("b")["job_ref"] == "legacy-42"


@pytest.mark.parametrize("legacy_key", ["actors", "steps"])
def test_legacy_route_shapes_are_converted_and_output_in_the_new_shape(mesh: Mesh, legacy_key: str) -> None:
    mesh.actor("enrich", actor="b")
    legacy = {"id": "old-1", "route": {legacy_key: ["a", "b", "c"], "current": 1}, "payload": {"x": 1}}
    assert mesh.deliver(legacy, actor="b") == {"batchItemFailures": []}

    out = mesh.only("c")
    assert out["route"] == {"prev": ["a", "b"], "curr": "c", "next": []}
    assert out["payload"] == {"x": 1, "seen": True}


def test_legacy_route_at_its_last_actor_finishes_at_sink(mesh: Mesh) -> None:
    mesh.actor("enrich", actor="c")
    mesh.deliver({"id": "old-2", "route": {"actors": ["a", "b", "c"], "current": 2}, "payload": {}}, actor="c")
    out = mesh.only("x-sink")
    assert out["route"] == {"prev": ["a", "b", "c"], "curr": "", "next": []}
    assert out["status"]["phase"] == "succeeded"
