"""x-backlog (`asya_crew.backlog`) against moto: what it publishes for the container actors' scaling
alarms (`asya_cdk.container_scaling`), and what it does about a queue it may not read."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya_crew.backlog import BacklogPublisher, UnreadQueuesError
from asya_local.functions.lambda_shapes import REGION

NS = "boxed"


@dataclass
class Aws:
    sqs: Any
    cloudwatch: Any

    def queue(self, actor: str, waiting: int = 0, in_flight: int = 0) -> str:
        url = str(self.sqs.create_queue(QueueName=f"asya-{NS}-{actor}")["QueueUrl"])
        for n in range(waiting + in_flight):
            self.sqs.send_message(QueueUrl=url, MessageBody=f"envelope {n}")
        if in_flight:
            self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=in_flight, VisibilityTimeout=300)
        return url

    def backlog(self, actor: str) -> list[float]:
        """The highest `Backlog` of each minute published for the actor."""
        now = datetime.now(UTC)
        points = self.cloudwatch.get_metric_statistics(
            Namespace="Asya",
            MetricName="Backlog",
            Dimensions=[{"Name": "mesh", "Value": NS}, {"Name": "actor", "Value": actor}],
            StartTime=now - timedelta(minutes=5),
            EndTime=now + timedelta(minutes=1),
            Period=60,
            Statistics=["Maximum"],
        )["Datapoints"]
        return [point["Maximum"] for point in points]


@pytest.fixture
def aws() -> Iterator[Aws]:
    with mock_aws():
        yield Aws(boto3.client("sqs", region_name=REGION), boto3.client("cloudwatch", region_name=REGION))


def test_each_container_actors_backlog_is_published_waiting_and_in_flight(aws: Aws) -> None:
    aws.queue("embed", waiting=3, in_flight=2)
    aws.queue("transcribe")
    aws.queue("prepare", waiting=7)  # a Lambda actor's: not in the schedule's input
    publisher = BacklogPublisher(aws.sqs, aws.cloudwatch)
    answer = publisher.handle({"mesh": NS, "actors": ["embed", "transcribe"]})
    assert answer == {"published": {"embed": 5, "transcribe": 0}}
    assert aws.backlog("embed") == [5.0]
    assert aws.backlog("transcribe") == [0.0], "an idle queue's 0 is published: the Idle alarm counts on it"
    assert aws.backlog("prepare") == []
    metrics = aws.cloudwatch.list_metrics(Namespace="Asya", MetricName="Backlog")["Metrics"]
    assert sorted(sorted((d["Name"], d["Value"]) for d in m["Dimensions"]) for m in metrics) == [
        [("actor", "embed"), ("mesh", NS)],
        [("actor", "transcribe"), ("mesh", NS)],
    ], "one metric per container actor, by mesh and actor: the scaling alarms' dimensions"


def test_a_queue_it_may_not_read_is_logged_and_the_others_are_published(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    aws.queue("embed", waiting=4)
    aws.queue("transcribe", waiting=1)
    denied = f"asya-{NS}-transcribe"

    def refuse(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        if denied not in str(params.get("body")):  # the request as it would be sent
            return None
        error = {"Code": "AccessDenied", "Message": f"not authorized to perform sqs:GetQueueUrl on {denied}"}
        return SimpleNamespace(status_code=403), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 403}}

    aws.sqs.meta.events.register("before-call.sqs.GetQueueUrl", refuse)
    publisher = BacklogPublisher(aws.sqs, aws.cloudwatch)
    with pytest.raises(UnreadQueuesError, match="backlog not published for transcribe"):
        publisher.handle({"mesh": NS, "actors": ["embed", "transcribe"]})
    assert aws.backlog("embed") == [4.0]
    assert aws.backlog("transcribe") == [], "no data point: its service holds its task count"
    [said] = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert said.getMessage().startswith("cannot read the queue's backlog: its service keeps its task count")
    assert said.queue == denied  # type: ignore[attr-defined]  # Powertools' `extra` fields
    assert "AccessDenied" in said.error  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "event",
    [{}, {"mesh": NS}, {"mesh": NS, "actors": "embed"}, {"mesh": NS, "actors": ["Embed/../x"]}, {"actors": []}],
)
def test_an_input_that_is_not_a_mesh_and_its_actors_is_refused(aws: Aws, event: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="the schedule's input"):
        BacklogPublisher(aws.sqs, aws.cloudwatch).handle(event)
