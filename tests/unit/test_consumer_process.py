"""`python -m asya.consumer` as a container runs it, against moto over HTTP: SIGTERM drains the hop
in hand or releases it at the stop timeout and exits 0; a handler that takes its process down loses
nothing, its envelope runs again in a fresh process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from asya.consumer.loop import EXIT_OVERDUE
from asya.task_store import TaskStore
from asya_local.task_agent import TaskAgent
from asya_local.testing.moto_server import moto_server
from asya_local.testing.tables import EVENTS, TASKS, create_idempotency_table, create_tables
from tests.support.mesh import envelope

REGION = "us-east-1"


@pytest.fixture
def sqs() -> Iterator[Any]:
    with moto_server() as url:
        client = boto3.client("sqs", endpoint_url=url, region_name=REGION)
        for name in ("a", "b", "x-sink", "x-sump"):
            client.create_queue(QueueName=f"asya-unit-{name}", Attributes={"VisibilityTimeout": "2"})
        yield client


def url_of(sqs: Any, actor: str) -> str:
    return str(sqs.get_queue_url(QueueName=f"asya-unit-{actor}")["QueueUrl"])


def counts(sqs: Any, actor: str = "a") -> tuple[int, int]:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = sqs.get_queue_attributes(QueueUrl=url_of(sqs, actor), AttributeNames=names)["Attributes"]
    return int(found[names[0]]), int(found[names[1]])


def start_consumer(sqs: Any, handler: str, **env: str) -> subprocess.Popen[bytes]:
    variables = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "AWS_ENDPOINT_URL": sqs.meta.endpoint_url,
        "AWS_DEFAULT_REGION": REGION,
        "ASYA_NAMESPACE": "unit",
        "ASYA_ACTOR_NAME": "a",
        "ASYA_HANDLER": f"tests.support.handlers.{handler}",
        "ASYA_QUEUE_URL": url_of(sqs, "a"),
        **env,
    }
    return subprocess.Popen([sys.executable, "-m", "asya.consumer"], env=variables)


def wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def outputs(sqs: Any) -> list[dict[str, Any]]:
    found = sqs.receive_message(QueueUrl=url_of(sqs, "b"), MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(message["Body"]) for message in found]


def test_sigterm_lets_the_hop_in_hand_finish_and_exits_0(sqs: Any) -> None:
    consumer = start_consumer(sqs, "slow", ASYA_STOP_GRACE_SECONDS="20")
    sqs.send_message(QueueUrl=url_of(sqs, "a"), MessageBody=json.dumps(envelope({"sleep": 2})))
    wait_for(lambda: counts(sqs) == (0, 1), 30)

    consumer.send_signal(signal.SIGTERM)

    assert consumer.wait(30) == 0
    assert [out["payload"] for out in outputs(sqs)] == [{"sleep": 2}]
    assert counts(sqs) == (0, 0)


def test_sigterm_releases_a_hop_that_outlasts_the_grace_period(sqs: Any) -> None:
    consumer = start_consumer(sqs, "slow", ASYA_STOP_GRACE_SECONDS="3")
    sqs.send_message(QueueUrl=url_of(sqs, "a"), MessageBody=json.dumps(envelope({"sleep": 60})))
    wait_for(lambda: counts(sqs) == (0, 1), 30)

    stopped = time.monotonic()
    consumer.send_signal(signal.SIGTERM)

    assert consumer.wait(30) == 0
    assert time.monotonic() - stopped < 3  # before the stop timeout, when ECS would kill it
    assert counts(sqs) == (1, 0)  # released: visible at once for another task, not after its timeout
    assert outputs(sqs) == []


def test_sigterm_ends_an_idle_consumers_long_poll_at_once(sqs: Any) -> None:
    consumer = start_consumer(sqs, "enrich")
    time.sleep(3)  # started, and waiting in a 20 s long poll

    stopped = time.monotonic()
    consumer.send_signal(signal.SIGTERM)

    assert consumer.wait(30) == 0
    assert time.monotonic() - stopped < 2


def test_a_handler_that_kills_its_process_loses_nothing(sqs: Any, tmp_path: Path) -> None:
    consumer = start_consumer(sqs, "dies_once", ASYA_CONSUMER_CONCURRENCY="2")
    marker = tmp_path / "died"
    sqs.send_message(QueueUrl=url_of(sqs, "a"), MessageBody=json.dumps(envelope({"marker": str(marker)})))
    try:
        wait_for(marker.exists, 30)
        found: list[dict[str, Any]] = []

        def delivered() -> bool:  # after its visibility timeout, by the process that took its place
            found.extend(outputs(sqs))
            return bool(found)

        wait_for(delivered, 30)
        assert [out["payload"] for out in found] == [{"marker": str(marker)}]
        assert counts(sqs) == (0, 0)
    finally:
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(30) == 0


@pytest.mark.parametrize("claimed_in", ["task record", "idempotency table"])
def test_a_hop_cut_short_runs_again_after_the_visibility_timeout_not_its_time_limit(
    sqs: Any, tmp_path: Path, claimed_in: str
) -> None:
    """The killed hop's claim (in its task record, or for an untracked hop in the idempotency table)
    was a lease of one visibility timeout (2 s), renewed by the heartbeat that died with it; held for
    the hop's 60 s limit, the redelivery would wait a minute."""
    dynamodb = boto3.client("dynamodb", endpoint_url=sqs.meta.endpoint_url, region_name=REGION)
    if claimed_in == "task record":
        create_tables(dynamodb)
        claims = {"ASYA_TASKS_TABLE": TASKS, "ASYA_EVENTS_TABLE": EVENTS}
    else:
        create_idempotency_table(dynamodb, "asya-unit-hops")
        claims = {"ASYA_IDEMPOTENCY_TABLE": "asya-unit-hops"}
    consumer = start_consumer(
        sqs, "dies_once", ASYA_CONSUMER_CONCURRENCY="2", ASYA_HOP_TIME_LIMIT_SECONDS="60", **claims
    )
    marker = tmp_path / "died"
    sqs.send_message(QueueUrl=url_of(sqs, "a"), MessageBody=json.dumps(envelope({"marker": str(marker)})))
    try:
        wait_for(marker.exists, 30)
        died = time.monotonic()
        found: list[dict[str, Any]] = []

        def delivered() -> bool:
            found.extend(outputs(sqs))
            return bool(found)

        wait_for(delivered, 20)
        assert time.monotonic() - died < 12, "about the visibility timeout (and a restart), far from 60 s"
        assert [out["payload"] for out in found] == [{"marker": str(marker)}]
        if claimed_in == "task record":
            task = TaskStore(TASKS, client=dynamodb).get("env-1")
            assert task is not None  # made by the first delivery's claim, admitted again by its redelivery
            assert task["actor"] == "a"
    finally:
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(30) == 0


def test_a_handler_that_cannot_be_stopped_ends_its_process_one_visibility_timeout_past_its_limit(sqs: Any) -> None:
    """As Lambda ends an invocation at its timeout: the handler swallows its stop, so the beats end
    (3 s limit, 2 s visibility timeout), the process exits, and the message comes back instead of
    staying hidden for as long as the handler runs (here 10 minutes)."""
    consumer = start_consumer(sqs, "stubborn", ASYA_HOP_TIME_LIMIT_SECONDS="3", ASYA_LAMBDA_MARGIN_SECONDS="1")
    sqs.send_message(QueueUrl=url_of(sqs, "a"), MessageBody=json.dumps(envelope({"sleep": 600})))
    wait_for(lambda: counts(sqs) == (0, 1), 20)
    received = time.monotonic()

    assert consumer.wait(30) == EXIT_OVERDUE
    assert 5 <= time.monotonic() - received < 10  # the limit, one visibility timeout, a beat
    wait_for(lambda: counts(sqs) == (1, 0), 10)  # back in its queue, for a retry
    assert outputs(sqs) == []


def test_consumer_processes_stop_when_their_tasks_main_process_is_killed(sqs: Any) -> None:
    consumer = start_consumer(sqs, "enrich", ASYA_CONSUMER_CONCURRENCY="2")
    wait_for(lambda: len(consumers_of(consumer.pid)) == 2, 30)
    pids = consumers_of(consumer.pid)
    time.sleep(3)  # each started its consumer and waits in a long poll
    assert all(_alive(pid) for pid in pids)

    consumer.kill()  # SIGKILL: no chance to stop them itself
    consumer.wait(10)

    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in pids), 10)


def consumers_of(parent: int) -> list[int]:
    """The consumer processes `parent` spawned (not multiprocessing's resource tracker)."""
    pids = [int(pid) for pid in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
    return [pid for pid in pids if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def _alive(pid: int) -> bool:
    """Not ended, nor a zombie waiting for a parent to collect it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_a_task_of_two_consumer_processes_is_protected_once_while_either_holds_a_hop(sqs: Any) -> None:
    """One protection per task: the main process follows both children's slots, so two hops at once
    cost one call to protect the task and one to clear it, not one each."""
    calls: list[str] = []

    def permits(_role: str, action: str, _arn: str) -> bool:  # asked once per call the agent gets
        calls.append(action)
        return True

    agent = TaskAgent({"asya-unit-a": "asya-unit-containers"}, permits=permits)
    task_id, uri = agent.register("asya-unit-a", "arn:aws:iam::123456789012:role/a")
    consumer = start_consumer(sqs, "slow", ASYA_CONSUMER_CONCURRENCY="2", ECS_AGENT_URI=uri)
    try:
        for n in (3, 4):
            sqs.send_message(QueueUrl=url_of(sqs, "a"), MessageBody=json.dumps(envelope({"sleep": n})))
        wait_for(lambda: agent.protected(task_id), 30)
        wait_for(lambda: counts(sqs) == (0, 2), 10)  # both hops run, one in each process
        wait_for(lambda: counts(sqs, "b")[0] == 2, 30)  # both routed
        wait_for(lambda: not agent.protected(task_id), 10)
        assert calls == ["ecs:UpdateTaskProtection", "ecs:UpdateTaskProtection"]  # protect once, clear once
    finally:
        consumer.terminate()
        consumer.wait(30)
        agent.stop()
