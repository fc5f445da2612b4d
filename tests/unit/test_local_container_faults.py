"""A fault spec reaches a container actor's consumer as it reaches a Lambda actor's worker: a batch
may kill it mid-hop (the stack starts another, as ECS replaces a task) and may have a message
delivered again while it runs, so the chaos harness exercises container actors too."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from asya_local.deployed_functions import ContainerTrigger, LocalFunction
from asya_local.functions.faults import FaultSpec
from asya_local.testing.moto_server import moto_server
from tests.support.consumers import consumer_workers
from tests.support.mesh import envelope
from tests.unit.test_local_container_scaling import wait_for


@pytest.mark.parametrize(
    ("concurrency", "replaced"),
    [
        ("1", "execution environment exited with code -9; starting a new one"),  # the task's process: the stack's
        ("2", "ended (exit -9); starting another"),  # one of its consumer processes: the task's supervisor's
    ],
)
def test_a_consumer_is_killed_mid_batch_and_replaced(tmp_path: Path, concurrency: str, replaced: str) -> None:
    with moto_server() as endpoint:
        sqs = boto3.client("sqs", endpoint_url=endpoint)
        urls = {name: sqs.create_queue(QueueName=f"asya-unit-{name}")["QueueUrl"] for name in ("a", "b")}
        environment = {
            "AWS_ENDPOINT_URL": endpoint,
            "ASYA_NAMESPACE": "unit",
            "ASYA_ACTOR_NAME": "a",
            "ASYA_HANDLER": "tests.support.handlers.enrich",
            "ASYA_QUEUE_URL": urls["a"],
            "ASYA_CONSUMER_CONCURRENCY": concurrency,
        }
        trigger = ContainerTrigger(urls["a"], 1, 1, 1)
        actor = LocalFunction("asya-unit-a", "asya.consumer", "", environment, 60.0, 4096, Path.cwd(), trigger)
        lines: list[str] = []
        workers = consumer_workers(
            environment, tmp_path, lines, FaultSpec(seed=3, kill_worker_rate=1.0, duplicate_delivery_rate=1.0)
        )
        workers.spawn(actor)
        try:
            # a batch of one message makes few AWS calls, fewer than the kill may be armed for: ten batches
            for _ in range(10):
                sqs.send_message(QueueUrl=urls["a"], MessageBody=json.dumps(envelope()))
            wait_for(lambda: any(line.startswith("fault: duplicate delivery of ") for line in lines), 30)
            wait_for(lambda: "fault: killed (SIGKILL) in the middle of a batch" in lines, 30)
            wait_for(lambda: any(replaced in line for line in lines), 30)
            wait_for(lambda: workers.running("a") == 1, 10)  # replaced
        finally:
            workers.stop()
