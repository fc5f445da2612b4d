"""The mesh on the local stack, driven exactly as on AWS: boto3 `send_message` into actor queues,
results read from the S3 bucket the stack deployed."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration
BULK = 400  # envelopes of the bulk test: forty full batches at the first actor


def test_three_actor_pipeline(running_mesh: RunningMesh) -> None:
    ids = [f"pipe-{n}-{uuid.uuid4().hex[:6]}" for n in range(5)]
    for n, envelope_id in enumerate(ids):
        running_mesh.send(["prep", "infer", "post"], {"n": n}, envelope_id)
    results = running_mesh.results_for(ids)
    for n, envelope_id in enumerate(ids):
        kept = results[envelope_id]
        assert kept["outcome"] == "succeeded"
        envelope = kept["envelope"]
        assert envelope["payload"] == {"n": n, "prepped": True, "label": "even" if n % 2 == 0 else "odd", "done": True}
        assert envelope["route"] == {"prev": ["prep", "infer", "post"], "curr": "", "next": []}
        assert envelope["status"]["phase"] == "succeeded"


def test_fan_out_reaches_sink_once_per_branch(running_mesh: RunningMesh) -> None:
    root = f"fan-{uuid.uuid4().hex[:6]}"
    running_mesh.send(["fan", "post"], {"parts": 3}, root)
    running_mesh.result(root)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        branches = [r for r in running_mesh.all_results() if r["envelope"].get("parent_id") == root]
        if len(branches) == 2:
            break
        time.sleep(0.3)
    assert len(branches) == 2
    parts = sorted(b["envelope"]["payload"]["part"] for b in branches)
    assert parts in ([0, 1], [0, 2], [1, 2])
    assert {running_mesh.result(root)["envelope"]["payload"]["part"], *parts} == {0, 1, 2}


def test_none_finishes_at_sink_unshifted(running_mesh: RunningMesh) -> None:
    envelope_id = f"skip-{uuid.uuid4().hex[:6]}"
    running_mesh.send(["skip", "post"], {"keep": "me"}, envelope_id)
    kept = running_mesh.result(envelope_id)
    assert kept["outcome"] == "succeeded"
    assert kept["envelope"]["route"] == {"prev": [], "curr": "skip", "next": ["post"]}
    assert kept["envelope"]["payload"] == {"keep": "me"}


def test_handler_error_is_retried_until_it_succeeds(running_mesh: RunningMesh) -> None:
    envelope_id = f"flaky-{uuid.uuid4().hex[:6]}"
    running_mesh.send(["flaky", "post"], {"n": 1}, envelope_id)
    kept = running_mesh.result(envelope_id, timeout=30)
    assert kept["outcome"] == "succeeded"
    assert kept["envelope"]["payload"] == {"n": 1, "attempts": 3, "done": True}


def test_malformed_body_lands_in_sump(running_mesh: RunningMesh) -> None:
    response = running_mesh.sqs.send_message(
        QueueUrl=running_mesh.queue_url("prep"), MessageBody="{definitely not json"
    )
    kept = running_mesh.result(f"sqs-{response['MessageId']}")
    assert kept["outcome"] == "sump"
    assert kept["envelope"]["status"]["reason"] == "ParseError"
    assert kept["envelope"]["payload"]["original_payload"] == "{definitely not json"


@pytest.mark.timeout(300)
def test_crashing_function_is_redriven_into_sump(running_mesh: RunningMesh) -> None:
    envelope_id = f"crash-{uuid.uuid4().hex[:6]}"
    running_mesh.send(["crash", "post"], {"n": 1}, envelope_id)
    kept = running_mesh.result(envelope_id, timeout=60)
    assert kept["outcome"] == "sump"
    status = kept["envelope"]["status"]
    assert status["phase"] == "failed"
    assert status["reason"] == "Redriven"
    assert "failed repeatedly" in status["error"]["message"]
    assert kept["envelope"]["route"]["curr"] == "crash"


@pytest.mark.timeout(300)
def test_an_invocation_past_the_function_timeout_is_ended_and_its_envelope_redriven(
    running_mesh: RunningMesh,
) -> None:
    envelope_id = f"stuck-{uuid.uuid4().hex[:6]}"
    running_mesh.send(["stuck", "post"], {"n": 1}, envelope_id)
    kept = running_mesh.result(envelope_id, timeout=90)  # after the 18 s visibility timeout
    stuck = [line for line in running_mesh.lines if line.startswith("stuck:")]
    timed_out = [line for line in stuck if "Task timed out" in line]
    assert timed_out, "\n".join(stuck)
    assert timed_out[0].endswith("Task timed out after 3.00 seconds")
    assert any(line == "stuck: execution environment was stopped; starting a new one" for line in running_mesh.lines)
    assert kept["outcome"] == "sump"
    assert kept["envelope"]["status"]["reason"] == "Redriven"
    assert kept["envelope"]["route"]["curr"] == "stuck"
    assert kept["envelope"]["payload"] == {"n": 1}


@pytest.mark.timeout(600)
def test_hundreds_of_envelopes_none_lost_none_duplicated(running_mesh: RunningMesh) -> None:
    """Enough envelopes for many full batches on every queue at once; the long run of thousands under
    faults is `make chaos`'s."""
    sink_before = running_mesh.batches["x-sink"]
    ids = [f"bulk-{n:04d}-{uuid.uuid4().hex[:4]}" for n in range(BULK)]
    url = running_mesh.queue_url("prep")
    route = {"prev": [], "curr": "prep", "next": ["infer", "post"]}
    bodies = [json.dumps({"id": envelope_id, "route": route, "payload": {"n": n}}) for n, envelope_id in enumerate(ids)]
    for start in range(0, len(bodies), 10):
        entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies[start : start + 10])]
        running_mesh.sqs.send_message_batch(QueueUrl=url, Entries=entries)
    idle = running_mesh.stack.wait_until_idle(timeout=300)
    assert idle, f"{json.dumps(running_mesh.stack.queue_depths())}\n{running_mesh.errors()}"
    results = running_mesh.results_for(ids, timeout=30)
    assert all(r["outcome"] == "succeeded" for r in results.values())
    assert running_mesh.batches["x-sink"] - sink_before == BULK, "x-sink received each envelope exactly once"
