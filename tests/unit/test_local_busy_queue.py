"""Waiting for the local mesh to be idle asks the queue that was busy last time first and stops at the
first busy queue (`asya_local.queues.busy_queue`), so a wait, or a bench, loads the endpoint less."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya_local.queues import busy_queue

NAMESPACE = "idle"


@pytest.fixture
def sqs() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def asked(sqs: Any) -> list[str]:
    """The queues each `GetQueueAttributes` asked about, in order."""
    urls: list[str] = []
    sqs.meta.events.register(
        "provide-client-params.sqs.GetQueueAttributes",
        lambda params, **_: urls.append(params["QueueUrl"].rsplit("/", 1)[-1]),
    )
    return urls


def test_a_busy_queue_is_found_and_the_one_busy_last_time_is_asked_first(sqs: Any) -> None:
    urls = {name: sqs.create_queue(QueueName=f"asya-{NAMESPACE}-{name}")["QueueUrl"] for name in ("a", "b", "c")}
    sqs.create_queue(QueueName="asya-other-d")  # another namespace's queue is never asked
    assert busy_queue(sqs, NAMESPACE) is None
    sqs.send_message(QueueUrl=urls["c"], MessageBody="{}")
    assert busy_queue(sqs, NAMESPACE) == urls["c"]
    seen = asked(sqs)
    assert busy_queue(sqs, NAMESPACE, first=urls["c"]) == urls["c"]
    assert seen == [f"asya-{NAMESPACE}-c"]  # one request while the same queue stays busy


@pytest.mark.parametrize("state", ["in flight", "delayed"])
def test_a_message_in_flight_or_delayed_keeps_its_queue_busy(sqs: Any, state: str) -> None:
    url = sqs.create_queue(QueueName=f"asya-{NAMESPACE}-a")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="{}", DelaySeconds=60 if state == "delayed" else 0)
    if state == "in flight":
        assert sqs.receive_message(QueueUrl=url, VisibilityTimeout=60)["Messages"]
    assert busy_queue(sqs, NAMESPACE) == url
