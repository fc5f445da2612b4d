"""The queue door (docs/security.md): a message without the mesh's seal is a new task at its route's
start, or it is refused and kept in x-sump under an id of its own; it is never a hop of another task.
Each attack is run in one process with the mesh's seals on, as deployed (`MeshHarness`), against a
victim's task created through the gateway's service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from asya.admission import admission_problem
from asya.envelope import Envelope
from asya.seal import SEAL_ATTRIBUTE, EnvelopeSeal
from asya_local.testing import MeshHarness, TaskError

MESH = """\
namespace: door
actors:
  first: {handler: steps.first, code: .}
  second: {handler: steps.second, code: .}
flows:
  two: {route: [first, second]}
  review: {route: [first, x-pause, second]}
"""
STEPS = """\
def first(p):
    return {**p, "first": True}


def second(p):
    return {**p, "second": True}
"""


@pytest.fixture
def mesh(tmp_path: Path) -> MeshHarness:
    (tmp_path / "steps.py").write_text(STEPS)
    (tmp_path / "mesh.yaml").write_text(MESH)
    return MeshHarness(tmp_path / "mesh.yaml")


def _inject(harness: MeshHarness, actor: str, envelope: dict[str, Any]) -> str:
    """What a producer allowed only `sqs:SendMessage` on `actor`'s queue can do: send any body."""
    sent = boto3.client("sqs").send_message(QueueUrl=harness.queue_url(actor), MessageBody=json.dumps(envelope))
    return str(sent["MessageId"])


def _refusal(harness: MeshHarness, message_id: str) -> dict[str, Any]:
    """What x-sump keeps of a refused message: a failed record of its own, `sqs-<message id>`."""
    assert harness.service is not None
    return harness.service.view(f"sqs-{message_id}")


def test_a_producers_envelope_starts_a_task_at_its_routes_start(mesh: MeshHarness) -> None:
    with mesh:
        _inject(mesh, "first", {"id": "produced-1", "route": {"curr": "first", "next": ["second"]}, "payload": {}})
        mesh.run_until_idle()
        run = mesh.run_of("produced-1")
    assert run.status == "succeeded"
    assert run.output == {"first": True, "second": True}


def test_a_forged_hop_under_a_victims_id_is_refused_and_the_victim_ends_as_it_would_have(
    mesh: MeshHarness,
) -> None:
    with mesh:
        victim = mesh.start("two", {"owner": "ana"})
        forged = {
            "id": victim,
            "route": {"prev": ["first"], "curr": "second", "next": []},
            "payload": {"forged": "by-bob"},
        }
        message_id = _inject(mesh, "second", forged)
        mesh.run_until_idle()
        run = mesh.run_of(victim)
        refusal = _refusal(mesh, message_id)
    assert run.status == "succeeded"
    assert run.output == {"owner": "ana", "first": True, "second": True}
    assert refusal["status"] == "failed"
    assert refusal["reason"] == "NotAdmitted"
    assert "route.prev" in refusal["error"]["message"]


def test_an_envelope_that_reuses_a_victims_id_at_the_start_is_refused(mesh: MeshHarness) -> None:
    with mesh:
        victim = mesh.start("two", {"owner": "ana"})
        forged = {"id": victim, "route": {"curr": "first", "next": []}, "payload": {"forged": "by-bob"}}
        message_id = _inject(mesh, "first", forged)
        mesh.run_until_idle()
        run = mesh.run_of(victim)
        refusal = _refusal(mesh, message_id)
    assert run.output == {"owner": "ana", "first": True, "second": True}
    assert "is a task the mesh already has" in refusal["error"]["message"]


def test_a_forgery_ahead_of_the_victims_envelope_in_one_batch_does_not_drop_it(mesh: MeshHarness) -> None:
    """The same hop twice in a batch is run once, the other record sharing its fate; a forgery under
    the victim's id must not be the one run, or the victim's envelope would follow its refusal."""
    with mesh:
        victim = mesh.start("two", {"owner": "ana"})
        sqs, url = boto3.client("sqs"), mesh.queue_url("first")
        [sealed] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=sealed["ReceiptHandle"])
        message_id = _inject(mesh, "first", {"id": victim, "route": {"curr": "first"}, "payload": {"forged": 1}})
        sqs.send_message(QueueUrl=url, MessageBody=sealed["Body"], MessageAttributes=sealed["MessageAttributes"])
        mesh.run_until_idle()
        run = mesh.run_of(victim)
        refusal = _refusal(mesh, message_id)
    assert run.output == {"owner": "ana", "first": True, "second": True}
    assert "is a task the mesh already has" in refusal["error"]["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"x-asya-root-id": "VICTIM"},  # plant a branch in the victim's task and end it early
        {"x-asya-mesh-status": "off"},  # untracked: replace what a paused task resumes with
        {"x-asya-fan-bucket": "VICTIM#0"},
        {"x-asya-redrive": 3},
    ],
)
def test_a_producer_cannot_set_the_meshs_own_headers(mesh: MeshHarness, headers: dict[str, Any]) -> None:
    with mesh:
        victim = mesh.start("two", {"owner": "ana"})
        planted = {
            name: value.replace("VICTIM", victim) if isinstance(value, str) else value
            for name, value in headers.items()
        }
        envelope = {"id": "planted-1", "route": {"curr": "second"}, "headers": planted, "payload": {"planted": 1}}
        message_id = _inject(mesh, "second", envelope)
        mesh.run_until_idle()
        run = mesh.run_of(victim)
        refusal = _refusal(mesh, message_id)
        assert mesh.service is not None
        with pytest.raises(TaskError):  # nothing was planted under the id it named
            mesh.service.view("planted-1")
    assert run.status == "succeeded"
    assert run.output == {"owner": "ana", "first": True, "second": True}
    assert run.branches == ()
    assert "the mesh's own headers" in refusal["error"]["message"]


def test_an_untracked_forgery_does_not_change_what_a_paused_task_resumes_with(mesh: MeshHarness) -> None:
    with mesh:
        victim = mesh.start("review", {"owner": "ana"})
        mesh.run_until_idle()
        assert mesh.run_of(victim).status == "paused"
        forged = {
            "id": victim,
            "route": {"curr": "second", "next": []},
            "headers": {"x-asya-mesh-status": "off"},
            "payload": {"forged": "by-bob"},
        }
        message_id = _inject(mesh, "second", forged)
        mesh.run_until_idle()
        run = mesh.resume(victim, {"approved": True})
        refusal = _refusal(mesh, message_id)
    assert run.status == "succeeded"
    assert run.output == {"owner": "ana", "first": True, "approved": True, "second": True}
    assert "x-asya-mesh-status" in refusal["error"]["message"]


def test_the_crew_takes_only_the_meshs_own_envelopes(mesh: MeshHarness) -> None:
    """A result sent straight to x-sink under the victim's id does not end the victim's task."""
    with mesh:
        victim = mesh.start("two", {"owner": "ana"})
        forged = {
            "id": victim,
            "route": {"prev": ["first", "second"], "curr": "", "next": []},
            "status": {"phase": "succeeded"},
            "payload": {"forged": "by-bob"},
        }
        message_id = _inject(mesh, "x-sink", forged)
        mesh.run_until_idle()
        run = mesh.run_of(victim)
        refusal = _refusal(mesh, message_id)
    assert run.output == {"owner": "ana", "first": True, "second": True}
    assert refusal["reason"] == "NotAdmitted"


def test_x_sump_takes_a_producers_envelope_its_actor_never_admitted_as_that_task(mesh: MeshHarness) -> None:
    """What a dead-letter queue brings when an actor's function cannot even start (an import error):
    the producer's envelope, unsealed. x-sump ends it as its own task, and never as another's."""
    with mesh:
        victim = mesh.start("two", {"owner": "ana"})
        _inject(mesh, "x-sump", {"id": "produced-2", "route": {"curr": "first"}, "payload": {}})
        stolen = _inject(mesh, "x-sump", {"id": victim, "route": {"curr": "first"}, "payload": {"forged": 1}})
        mesh.run_until_idle()
        redriven = mesh.run_of("produced-2")
        run = mesh.run_of(victim)
        refusal = _refusal(mesh, stolen)
    assert (redriven.status, redriven.task["reason"]) == ("failed", "Redriven")
    assert run.output == {"owner": "ana", "first": True, "second": True}
    assert "is a task the mesh already has" in refusal["error"]["message"]


def test_a_seal_opens_only_its_own_body() -> None:
    seal = EnvelopeSeal("arn:secret", read_secret=lambda _: "s3cret")
    body = '{"id":"t1"}'
    attributes = {SEAL_ATTRIBUTE: {"stringValue": seal.seal(body)}}
    assert seal.opens(body, attributes)
    assert not seal.opens('{"id":"t2"}', attributes)
    assert not seal.opens(body, {})
    assert not seal.opens(body, {SEAL_ATTRIBUTE: {"stringValue": "forged"}})
    other = EnvelopeSeal("arn:secret", read_secret=lambda _: "another mesh's")
    assert not other.opens(body, attributes)
    assert EnvelopeSeal(None).opens(body, {})  # no secret: nothing is sealed, every record passes


@pytest.mark.parametrize(
    ("envelope", "problem"),
    [
        ({"route": {"prev": ["a"], "curr": "b"}}, "route.prev"),
        ({"route": {"curr": "a"}, "parent_id": "p"}, "parent_id"),
        ({"route": {"curr": "a"}, "headers": {"X-Asya-Join": []}}, "headers"),
        ({"route": {"curr": "a"}, "status": {"attempt": 2}}, "status.attempt"),
        ({"route": {"curr": "a"}, "headers": {"traceparent": "00-x", "my-header": 1}}, None),
    ],
)
def test_what_a_producer_may_send(envelope: dict[str, Any], problem: str | None) -> None:
    found = admission_problem(Envelope.model_validate({"id": "t", "payload": {}, **envelope}))
    assert (found or "").startswith(problem or "")
    assert (found is None) == (problem is None)
