"""The local stack scales a container actor's consumers by its ECS service's rule: none while its
queue has had nothing visible or in flight for the cool-down, as many as the backlog's peak over the
last minute asks for (one per `messages_per_task`, up to `max_tasks`) as soon as work arrives,
following it down while it lasts."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from asya import variables
from asya_local.container_counts import ServicePlace, task_counts
from asya_local.container_scaling import Scaler, start_scaler, wanted
from asya_local.deployed_functions import ContainerTrigger, LocalFunction
from asya_local.task_agent import TaskAgent
from asya_local.testing.moto_server import moto_server
from tests.support.consumers import consumer_workers
from tests.support.mesh import envelope

RULE = ContainerTrigger(queue_url="", min_tasks=0, max_tasks=3, messages_per_task=2)


def newest_stopped(running: list[str]) -> Callable[[str], bool]:
    """A scaler's `stop_one` over a list of consumers: the newest goes."""

    def stop(_name: str) -> bool:
        running.pop()
        return True

    return stop


@pytest.mark.parametrize(
    ("running", "backlog", "idle_for", "expected"),
    [
        (0, 0, 0.0, 0),  # idle and none running: stays at zero
        (0, 1, 0.0, 1),  # the first message starts one consumer
        (1, 5, 0.0, 3),  # 5 messages at 2 per consumer: 3
        (1, 50, 0.0, 3),  # never above max
        (3, 1, 0.0, 1),  # follows the backlog down while there is work
        (2, 0, 10.0, 2),  # empty, but not for the cool-down yet
        (2, 0, 60.0, 0),  # empty for the cool-down: back to zero
    ],
)
def test_the_rule(running: int, backlog: int, idle_for: float, expected: int) -> None:
    assert wanted(RULE, running, backlog, idle_for, cooldown=60.0) == expected


def test_a_queue_scales_its_consumers_from_zero_and_back(mesh: Any) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="asya-unit-gpu")["QueueUrl"]
    running: list[str] = []
    said: list[str] = []
    scaler = Scaler(
        sqs,
        {"asya-unit-gpu": ContainerTrigger(url, 0, 3, 2)},
        cooldown=60.0,
        count=lambda _name: len(running),
        start=running.append,
        stop_one=newest_stopped(running),
        on_line=lambda _name, text: said.append(text),
    )
    assert scaler.tick("asya-unit-gpu", now=0.0) == 0

    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=str(n))
    assert scaler.tick("asya-unit-gpu", now=1.0) == 2 == len(running)
    for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    assert scaler.tick("asya-unit-gpu", now=2.0) == 2  # empty from now on: the cool-down starts
    assert scaler.tick("asya-unit-gpu", now=30.0) == 2  # the minute's peak is still 3
    assert scaler.tick("asya-unit-gpu", now=61.0) == 2  # no backlog in the last minute, but not idle for 60 s
    assert scaler.tick("asya-unit-gpu", now=62.0) == 0 == len(running)
    assert said == ["scaling 0 -> 2 consumers (backlog 3)", "scaling 2 -> 0 consumers (backlog 0)"]


def test_consumers_follow_the_backlogs_peak_down(mesh: Any) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="asya-unit-gpu")["QueueUrl"]
    running: list[str] = []
    scaler = Scaler(
        sqs,
        {"asya-unit-gpu": ContainerTrigger(url, 0, 4, 1)},
        cooldown=60.0,
        count=lambda _name: len(running),
        start=running.append,
        stop_one=newest_stopped(running),
        on_line=lambda _name, _text: None,
    )
    for n in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=str(n))
    assert scaler.tick("asya-unit-gpu", now=0.0) == 4
    for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)["Messages"]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    assert scaler.tick("asya-unit-gpu", now=30.0) == 4  # the peak of the last minute: 4
    assert scaler.tick("asya-unit-gpu", now=61.0) == 1 == len(running)  # one left


def test_the_local_stack_runs_a_container_actor_from_zero_and_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real consumer processes (`asya_local.functions.consumer_worker`) started by the scaler against
    moto over HTTP: none while idle, one when an envelope arrives, which it routes; none again after
    the cool-down. The actor's ECS service on the endpoint follows the count, as the console reads it."""
    monkeypatch.setenv(variables.LOCAL_CONTAINER_COOLDOWN.name, "1")
    with moto_server() as endpoint:
        sqs, urls, environment = consumer_mesh(endpoint, "enrich")
        actor = LocalFunction(
            "asya-unit-a",
            "asya.consumer",
            "",
            environment,
            60.0,
            4096,
            Path.cwd(),
            ContainerTrigger(urls["a"], 0, 2, 1),
        )
        lines: list[str] = []
        workers = consumer_workers(environment, tmp_path, lines)
        ecs = boto3.client("ecs", endpoint_url=endpoint)
        ecs.create_cluster(clusterName="asya-unit-containers")
        ecs.register_task_definition(
            family="asya-unit-a", containerDefinitions=[{"name": "consumer", "image": "a", "memory": 512}]
        )
        places = {"a": ServicePlace("asya-unit-containers", "asya-unit-a", 2)}

        def shown() -> str:
            return task_counts(ecs, places)["a"].text()

        scaler = start_scaler(
            sqs,
            [actor],
            workers,
            lambda _function: "a",
            lambda _source, line: lines.append(line),
            ecs=ecs,
            places=places,
        )
        try:
            time.sleep(1.5)
            assert workers.running("a") == 0  # idle: nothing runs
            assert shown() == "0 (scaled to zero)"  # as the console and `asya queues` read it

            sqs.send_message(QueueUrl=urls["a"], MessageBody=json.dumps(envelope()))
            wait_for(lambda: workers.running("a") == 1, 10)
            wait_for(lambda: shown() == "1 of 2 tasks", 5)  # the service follows its consumers' start
            routed = wait_for(lambda: sqs.receive_message(QueueUrl=urls["b"]).get("Messages"), 60)
            assert json.loads(routed[0]["Body"])["payload"] == {"text": "hello", "seen": True}

            wait_for(lambda: workers.running("a") == 0, 10)  # idle for the cool-down: back to zero
            wait_for(lambda: shown() == "0 (scaled to zero)", 5)
            assert "scaling 0 -> 1 consumers (backlog 1)" in lines
            assert "scaling 1 -> 0 consumers (backlog 0)" in lines
        finally:
            scaler.stop()
            workers.stop()


def consumer_mesh(endpoint: str, handler: str, **extra: str) -> tuple[Any, dict[str, str], dict[str, str]]:
    """Actor `a`'s queue and the two it routes to on `endpoint`, and its consumers' environment with
    `handler` (of tests.support.handlers) and `extra`."""
    sqs = boto3.client("sqs", endpoint_url=endpoint)
    urls = {name: sqs.create_queue(QueueName=f"asya-unit-{name}")["QueueUrl"] for name in ("a", "b", "x-sink")}
    environment = {
        "AWS_ENDPOINT_URL": endpoint,
        "ASYA_NAMESPACE": "unit",
        "ASYA_ACTOR_NAME": "a",
        "ASYA_HANDLER": f"tests.support.handlers.{handler}",
        "ASYA_QUEUE_URL": urls["a"],
        **extra,
    }
    return sqs, urls, environment


def wait_for(found: Callable[[], Any], seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while not (value := found()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
    return value


def test_a_scale_in_stops_an_idle_consumer_not_the_one_protected_mid_hop(tmp_path: Path) -> None:
    """Two real consumers, each a task with the local agent's `ECS_AGENT_URI`: the first takes a slow
    hop and protects its task; the second, started after it, is idle. The backlog (the one message in
    flight) asks for one consumer: the idle one is stopped, as ECS stops only unprotected tasks. The
    first is the one a scale-in without protection stops (the oldest); it would release its hop at its
    2 s stop timeout, to run again. Here its hop runs once, to the end."""
    with moto_server() as endpoint:
        sqs, urls, environment = consumer_mesh(endpoint, "slow", ASYA_STOP_GRACE_SECONDS="2")
        trigger = ContainerTrigger(urls["a"], 0, 2, 1)
        actor = LocalFunction("asya-unit-a", "asya.consumer", "role/a", environment, 60.0, 4096, Path.cwd(), trigger)
        lines: list[str] = []
        workers = consumer_workers(environment, tmp_path, lines)
        agent = workers.tasks = TaskAgent({actor.name: "asya-unit-containers"}, permits=lambda *_asked: True)
        said: list[str] = []
        scaler = Scaler(
            sqs,
            {actor.name: trigger},
            cooldown=60.0,
            count=lambda _name: workers.running("a"),
            start=lambda _name: workers.spawn(actor),
            stop_one=lambda _name: workers.retire("a"),
            on_line=lambda _name, text: said.append(text),
        )
        try:
            workers.spawn(actor)
            sqs.send_message(QueueUrl=urls["a"], MessageBody=json.dumps(envelope({"sleep": 8})))
            busy = wait_for(agent.protected_tasks, 30)  # its hop runs, its task protected
            workers.spawn(actor)  # a second consumer, idle
            assert workers.running("a") == 2

            assert scaler.tick(actor.name) == 1  # one message in flight: one consumer is enough
            wait_for(lambda: workers.running("a") == 1, 5)
            time.sleep(1)
            assert agent.protected_tasks() == busy  # the task running the hop is the one left, still on it
            routed = wait_for(lambda: sqs.receive_message(QueueUrl=urls["b"]).get("Messages"), 30)

            assert json.loads(routed[0]["Body"])["payload"] == {"sleep": 8}
            assert said == ["scaling 2 -> 1 consumers (backlog 1)"]
        finally:
            workers.stop()
            agent.stop()
