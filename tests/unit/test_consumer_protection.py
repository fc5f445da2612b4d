"""A container task protects itself from scale-in while its consumers hold messages
(`asya.consumer.protection`), through the ECS agent's endpoint, here the local stack's
(`asya_local.task_agent`, which checks requests as the agent and ECS do): protected when a batch
arrives, unprotected once a receive comes back empty, renewed before it lapses, and an agent that
fails never touches a hop."""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya.consumer.loop import Consumer
from asya.consumer.protection import (
    AGENT_URI,
    HOLDING,
    LINGER_SECONDS,
    MARGIN_MINUTES,
    STATE_PATH,
    AgentError,
    TaskProtection,
    expiry_minutes,
    flag,
    outlasts_drain,
    protect_while_busy,
    put_protection,
)
from asya.consumer.settings import ConsumerSettings
from asya_local.roles import role_permits
from asya_local.task_agent import TaskAgent
from tests.support.mesh import NS, Mesh, envelope

ROLE = "arn:aws:iam::123456789012:role/asya-unit-a"


@pytest.fixture
def agent() -> Iterator[TaskAgent]:
    served = TaskAgent({"asya-unit-a": "asya-unit-containers"}, permits=lambda _role, _action, _arn: True)
    yield served
    served.stop()


def wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_expiry_covers_a_batchs_time_limit_and_a_margin_within_ecss_48_hours() -> None:
    assert expiry_minutes(3600) == 60 + MARGIN_MINUTES
    assert expiry_minutes(61) == 2 + MARGIN_MINUTES  # rounded up
    assert expiry_minutes(43200) == 720 + MARGIN_MINUTES  # the longest limit
    assert expiry_minutes(10**6) == 2880  # ECS's longest protection


def test_a_task_is_protected_while_its_consumer_holds_a_batch_and_unprotected_after_it(
    mesh: Mesh, agent: TaskAgent
) -> None:
    task_id, uri = agent.register("asya-unit-a", ROLE)
    queue_url = str(mesh.sqs.get_queue_url(QueueName=f"asya-{NS}-a")["QueueUrl"])
    settings = ConsumerSettings(queue_url=queue_url, hop_time_limit=60)
    busy = [0.0]
    consumer = Consumer(mesh.actor("slow").handle, mesh.sqs, settings, f"asya-{NS}-a", flag(busy, 0))
    stopped = threading.Event()
    protection = protect_while_busy(busy, settings.hop_time_limit, {AGENT_URI: uri}, stopped)
    assert protection is not None
    assert protection.minutes == 1 + MARGIN_MINUTES
    try:
        mesh.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(envelope({"sleep": 2})))
        hop = threading.Thread(target=consumer.poll_once, kwargs={"wait_seconds": 0})
        hop.start()
        wait_for(lambda: agent.protected(task_id), 5)  # protected while the hop runs
        assert hop.is_alive()
        hop.join()
        wait_for(lambda: not agent.protected(task_id), 5)  # settled, and no batch after it: unprotected
    finally:
        stopped.set()
        consumer.holding.stop()
    assert [out["payload"] for out in mesh.messages("b")] == [{"sleep": 2}]


def test_a_steady_stream_costs_one_call_to_protect_and_one_to_clear() -> None:
    calls: list[tuple[bool, int | None]] = []
    now = [0.0]
    protection = TaskProtection("http://agent", 65, clock=lambda: now[0], put=record(calls))
    for busy in (True, True, True, True, False, False):
        protection.update(busy)
        now[0] += 10
    assert calls == [(True, 65), (False, None)]


def test_a_process_settling_one_batch_and_receiving_the_next_stays_busy_in_between() -> None:
    """The linger that makes a steady stream cost no call between batches: the slot still reads busy
    just after a settle, and idle once the linger has passed with no receive."""
    busy = [0.0]
    mark = flag(busy, 0)
    mark(True)
    mark(False)  # settled: the next receive of a stream comes within the linger
    assert busy[0] > time.monotonic()
    mark(True)
    assert busy[0] == HOLDING
    mark(False)
    assert time.monotonic() < busy[0] <= time.monotonic() + LINGER_SECONDS
    time.sleep(LINGER_SECONDS)  # the linger passes with no receive: idle
    assert busy[0] <= time.monotonic()


def test_only_a_batch_the_sigterm_drain_may_not_finish_is_worth_protecting() -> None:
    """Defaults (a 70 s batch, a 118 s drain): the drain finishes it, and the task is not protected,
    which would hold up a deployment; a 10-minute hop's task is."""
    assert not outlasts_drain(70, 118)
    assert outlasts_drain(610, 118)


def test_a_task_busy_for_longer_than_its_protection_has_it_renewed_before_it_lapses() -> None:
    calls: list[tuple[bool, int | None]] = []
    now = [0.0]
    protection = TaskProtection("http://agent", 65, clock=lambda: now[0], put=record(calls))
    protection.update(True)
    now[0] = (65 - MARGIN_MINUTES) * 60 - 1
    protection.update(True)
    assert len(calls) == 1  # still more than the margin left
    now[0] += 2
    protection.update(True)
    assert calls == [(True, 65), (True, 65)]  # renewed with the margin to spare
    assert protection.until == now[0] + 65 * 60


def test_an_agent_that_is_down_costs_a_warning_and_a_retry_later_not_a_hop(caplog: pytest.LogCaptureFixture) -> None:
    now, down = [0.0], [True]
    calls: list[tuple[bool, int | None]] = []
    recorded = record(calls)

    def put(uri: str, enabled: bool, minutes: int | None) -> dict[str, Any]:
        return put_protection("http://127.0.0.1:9", enabled, minutes) if down[0] else recorded(uri, enabled, minutes)

    protection = TaskProtection("http://agent", 65, clock=lambda: now[0], put=put)  # nothing listens on port 9
    with caplog.at_level(logging.WARNING, "asya.consumer"):
        protection.update(True)
        protection.update(True)  # within the pause: not tried again
    assert protection.until is None
    assert len([r for r in caplog.records if "could not protect the task" in r.getMessage()]) == 1
    now[0], down[0] = 6.0, False  # the pause is over, the agent is back
    protection.update(True)
    assert calls == [(True, 65)]
    assert protection.until is not None


def test_the_agents_refusals_are_errors_the_consumer_logs(agent: TaskAgent) -> None:
    _task_id, uri = agent.register("asya-unit-a", ROLE)
    answer = put_protection(uri, True, 65)
    assert answer["ProtectionEnabled"] is True
    assert answer["TaskArn"].startswith("arn:aws:ecs:us-east-1:123456789012:task/asya-unit-containers/")
    with pytest.raises(AgentError, match="HTTP 400 InvalidParameterException"):
        put_protection(uri, True, 2881)  # over ECS's 48 hours
    with pytest.raises(AgentError, match="HTTP 404 ResourceNotFoundException"):
        put_protection(agent.url + "/api/no-such-task", True, 5)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"ProtectionEnabled": True, "ExpiresInMinutes": 60}, 200, None),
        ({"ProtectionEnabled": False}, 200, None),
        ({"ExpiresInMinutes": 60}, 400, "InvalidParameterException"),  # ProtectionEnabled is required
        ({"ProtectionEnabled": True, "ExpiresInMinutes": 0}, 400, "InvalidParameterException"),
        ({"ProtectionEnabled": True, "ExpiresInMinutes": 2881}, 400, "InvalidParameterException"),
        ({"ProtectionEnabled": True, "ExpiresInMinutes": 1.5}, 400, "InvalidParameterException"),
        ({"ProtectionEnabled": "yes"}, 400, "InvalidParameterException"),
        ({"ProtectionEnabled": True, "Minutes": 5}, 400, "InvalidParameterException"),  # unknown field
    ],
)
def test_the_local_agent_checks_a_request_as_ecs_does(
    agent: TaskAgent, body: dict[str, Any], status: int, code: str | None
) -> None:
    task_id, _uri = agent.register("asya-unit-a", ROLE)
    answered, answer = agent.answer("PUT", task_id, json.dumps(body).encode())
    assert answered == status
    assert (answer.get("error") or {}).get("Code") == code
    if status == 200:
        assert answer["protection"]["ProtectionEnabled"] is body["ProtectionEnabled"]
        assert agent.protected(task_id) is body["ProtectionEnabled"]


def test_a_task_role_without_the_grant_is_refused_as_on_ecs() -> None:
    asked: list[tuple[str, str, str]] = []

    def refuses(role: str, action: str, resource: str) -> bool:
        asked.append((role, action, resource))
        return False

    agent = TaskAgent({"asya-unit-a": "asya-unit-containers"}, permits=refuses)
    try:
        task_id, uri = agent.register("asya-unit-a", ROLE)
        with pytest.raises(AgentError, match="AccessDeniedException"):
            put_protection(uri, True, 5)
        assert not agent.protected(task_id)
        assert asked == [(ROLE, "ecs:UpdateTaskProtection", asked[0][2])]
        assert asked[0][2].endswith(f":task/asya-unit-containers/{task_id}")
        request = urllib.request.Request(uri + STATE_PATH)  # GET reads the state, under its own action
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(request, timeout=5)
        assert asked[-1][1] == "ecs:GetTaskProtection"
    finally:
        agent.stop()


def record(calls: list[tuple[bool, int | None]]) -> Callable[[str, bool, int | None], dict[str, Any]]:
    def put(_uri: str, enabled: bool, minutes: int | None) -> dict[str, Any]:
        calls.append((enabled, minutes))
        return {"ProtectionEnabled": enabled}

    return put


def test_the_local_agent_asks_the_task_roles_policies_as_ecs_asks_iam() -> None:
    """The grant the CDK app gives a container actor's task role (`asya_cdk.container.task_protection`):
    its own cluster's tasks, `UpdateTaskProtection` only."""
    with mock_aws():
        iam = boto3.client("iam")
        iam.create_role(RoleName="asya-unit-a", AssumeRolePolicyDocument=json.dumps({"Statement": []}))
        grant = {
            "Effect": "Allow",
            "Action": "ecs:UpdateTaskProtection",
            "Resource": "arn:aws:ecs:us-east-1:123456789012:task/asya-unit-containers/*",
        }
        policy = json.dumps({"Version": "2012-10-17", "Statement": [grant]})
        iam.put_role_policy(RoleName="asya-unit-a", PolicyName="p", PolicyDocument=policy)
        permits = role_permits(boto3.client)
        task = "arn:aws:ecs:us-east-1:123456789012:task/{}/0123"

        assert permits(ROLE, "ecs:UpdateTaskProtection", task.format("asya-unit-containers"))
        assert not permits(ROLE, "ecs:UpdateTaskProtection", task.format("asya-other-containers"))
        assert not permits(ROLE, "ecs:GetTaskProtection", task.format("asya-unit-containers"))
