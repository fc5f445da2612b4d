"""The security review's queue-door attacks, against the local stack: a producer allowed only
`sqs:SendMessage` on actor `post`'s queue forges envelopes for a victim's tasks, made through the
gateway. Each forgery is refused (kept in x-sump as `NotAdmitted`, under an id of its own) and the
victim's task ends as it would have without it (docs/security.md, "The queue door")."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from asya_local.roles import local_client
from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration

PRODUCER = "queue-door-producer"


@pytest.fixture(scope="module")
def producer(running_mesh: RunningMesh) -> Any:
    """An SQS client of an IAM user that may send to `post`'s queue and do nothing else: what a
    producer granted with `grant_send` holds."""
    iam = running_mesh.stack.client("iam")
    iam.create_user(UserName=PRODUCER)
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": _queue_arn(running_mesh, "post")}],
    }
    iam.put_user_policy(UserName=PRODUCER, PolicyName="send-to-post", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=PRODUCER)["AccessKey"]
    credentials = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
    return local_client("sqs", running_mesh.stack.endpoint, credentials)


def _queue_arn(mesh: RunningMesh, actor: str) -> str:
    url = mesh.queue_url(actor)
    return str(mesh.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def _forge(mesh: RunningMesh, producer: Any, envelope: dict[str, Any]) -> str:
    return str(producer.send_message(QueueUrl=mesh.queue_url("post"), MessageBody=json.dumps(envelope))["MessageId"])


def _until(mesh: RunningMesh, task_id: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    gateway = mesh.gateway()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        task = gateway.task(task_id)
        if task is not None and done(task):
            return task
        time.sleep(0.3)
    raise AssertionError(f"task {task_id}: {gateway.task(task_id)}\n{mesh.errors()}")


def _refused(mesh: RunningMesh, message_id: str) -> str:
    """Why x-sump kept the forgery: its reason and message, from the record of its own id."""
    kept = mesh.result(f"sqs-{message_id}")
    status = kept["envelope"]["status"]
    assert (kept["outcome"], status["reason"]) == ("sump", "NotAdmitted"), kept
    return str(status["error"]["message"])


def test_a_forged_hop_under_a_victims_id_does_not_finish_the_victims_task(
    running_mesh: RunningMesh, producer: Any
) -> None:
    gateway = running_mesh.gateway()
    victim = gateway.create_task({"flow": "sleepy", "payload": {"sleep": 2, "owner": "ana"}})["id"]
    forged = {"id": victim, "route": {"prev": ["slow"], "curr": "post", "next": []}, "payload": {"forged": "by-bob"}}
    message_id = _forge(running_mesh, producer, forged)
    assert "route.prev" in _refused(running_mesh, message_id)
    ended = _until(running_mesh, victim, lambda task: task["terminal"])
    assert ended["status"] == "succeeded"
    assert ended["output"] == {"sleep": 2, "owner": "ana", "done": True}


def test_a_forged_root_header_plants_nothing_and_ends_nothing(running_mesh: RunningMesh, producer: Any) -> None:
    gateway = running_mesh.gateway()
    victim = gateway.create_task({"flow": "sleepy", "payload": {"sleep": 4}})["id"]
    planted = {
        "id": f"planted-{victim}",
        "route": {"curr": "post"},
        "headers": {"x-asya-root-id": victim},
        "payload": {"planted": "by-bob"},
    }
    message_id = _forge(running_mesh, producer, planted)
    assert "x-asya-root-id" in _refused(running_mesh, message_id)
    assert gateway.task(f"planted-{victim}") is None
    now = gateway.task(victim)
    assert now is not None
    assert not now["terminal"], "its only hop is still sleeping"
    ended = _until(running_mesh, victim, lambda task: task["terminal"])
    assert (ended["status"], ended["output"], ended.get("branch_ids", [])) == (
        "succeeded",
        {"sleep": 4, "done": True},
        [],
    )


def test_an_untracked_forgery_does_not_change_what_a_paused_task_resumes_with(
    running_mesh: RunningMesh, producer: Any
) -> None:
    gateway = running_mesh.gateway()
    victim = gateway.create_task({"flow": "review", "payload": {"n": 1}})["id"]
    _until(running_mesh, victim, lambda task: task["status"] == "paused")
    forged = {
        "id": victim,
        "route": {"curr": "post", "next": []},
        "headers": {"x-asya-mesh-status": "off"},
        "payload": {"forged": "by-bob"},
    }
    message_id = _forge(running_mesh, producer, forged)
    assert "x-asya-mesh-status" in _refused(running_mesh, message_id)
    gateway.resume(victim, {"approved": True})
    ended = _until(running_mesh, victim, lambda task: task["terminal"])
    assert ended["status"] == "succeeded"
    assert ended["output"] == {"n": 1, "prepped": True, "approved": True, "done": True}


def test_a_producers_own_envelope_still_starts_a_task(running_mesh: RunningMesh, producer: Any) -> None:
    """What the producer is allowed: a new task at `post`, with a new id."""
    envelope: dict[str, Any] = {"id": f"produced-{time.time_ns()}", "route": {"curr": "post"}, "payload": {"mine": 1}}
    _forge(running_mesh, producer, envelope)
    kept = running_mesh.result(envelope["id"])
    assert (kept["outcome"], kept["envelope"]["payload"]) == ("succeeded", {"mine": 1, "done": True})
