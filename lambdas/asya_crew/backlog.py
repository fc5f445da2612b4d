"""x-backlog: each container actor's backlog, published to CloudWatch every minute by a schedule.

A container actor's service scales on its queue's backlog (`asya_cdk.container_scaling`). SQS's own
metrics would do, but SQS publishes them only while a queue is active: a queue no consumer has polled
for six hours (an actor idle at `min: 0`) goes quiet, and its first message's scale-out waited for
them to come back. This function asks SQS for each queue's counts (`GetQueueAttributes`, which also
keeps the queue active, so SQS's own metrics go on for the dashboard) and puts them in the mesh's
metric namespace, `Backlog` by `mesh` and `actor`, all in one `PutMetricData`. The schedule's rule
hands it the mesh and its container actors (its constant input), so it needs no variables.

A queue it cannot read is logged and left out, the others are published all the same, and the
invocation then fails so Lambda's `Errors` metric shows it: an actor without a data point holds its
task count until one comes (the alarms' missing-data rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from asya.clients import LazyClient
from asya.entry import LambdaEntry
from asya.names import ACTOR_NAME, BACKLOG, resource_name
from asya.telemetry import ACTOR_DIMENSION, BACKLOG_METRIC, MESH_DIMENSION, METRIC_NAMESPACE

if TYPE_CHECKING:
    from types_boto3_sqs.client import SQSClient


class UnreadQueuesError(RuntimeError):
    """Some queues could not be read; the others' backlog was published."""


@dataclass(frozen=True)
class Mesh:
    """The rule's input: `{"mesh": namespace, "actors": [name, ...]}`."""

    namespace: str
    actors: tuple[str, ...]

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Mesh:
        namespace, actors = event.get("mesh"), event.get("actors")
        if not isinstance(namespace, str) or not namespace:
            raise ValueError("the schedule's input names no mesh")
        if not isinstance(actors, list) or not all(isinstance(a, str) and re.match(ACTOR_NAME, a) for a in actors):
            raise ValueError(f"the schedule's input lists no valid actor names: {actors!r}")
        return cls(namespace, tuple(actors))


class BacklogPublisher:
    sqs: LazyClient[SQSClient] = LazyClient("sqs")
    cloudwatch: LazyClient[Any] = LazyClient("cloudwatch")  # no CloudWatch stubs in the dev dependencies

    def __init__(self, sqs: SQSClient | None = None, cloudwatch: Any = None) -> None:
        self._sqs, self._cloudwatch = sqs, cloudwatch
        self.logger = Logger(service=BACKLOG)
        self._queue_urls: dict[str, str] = {}  # resolved once per execution environment

    def handle(self, event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
        mesh = Mesh.from_event(event)
        now = datetime.now(UTC)
        published: dict[str, int] = {}
        unread: dict[str, str] = {}
        for actor in mesh.actors:
            queue = resource_name(mesh.namespace, actor)
            try:
                published[actor] = self.backlog(queue)
            except (ClientError, BotoCoreError) as exc:
                unread[actor] = str(exc)
                self.logger.error(
                    "cannot read the queue's backlog: its service keeps its task count until it can",
                    extra={"queue": queue, "error": str(exc)},
                )
        if published:
            self.cloudwatch.put_metric_data(
                Namespace=METRIC_NAMESPACE,
                MetricData=[
                    {
                        "MetricName": BACKLOG_METRIC,
                        "Dimensions": [
                            {"Name": MESH_DIMENSION, "Value": mesh.namespace},
                            {"Name": ACTOR_DIMENSION, "Value": actor},
                        ],
                        "Timestamp": now,
                        "Value": float(count),
                        "Unit": "Count",
                    }
                    for actor, count in published.items()
                ],
            )
        if unread:
            raise UnreadQueuesError(f"backlog not published for {', '.join(sorted(unread))}: see the log")
        return {"published": published}

    def backlog(self, queue: str) -> int:
        """Messages waiting plus in flight: both hold work a task must do."""
        url = self._queue_urls.get(queue)
        if url is None:
            url = self._queue_urls[queue] = self.sqs.get_queue_url(QueueName=queue)["QueueUrl"]
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        waiting = attributes.get("ApproximateNumberOfMessages", "0")
        return int(waiting) + int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0"))


lambda_handler: LambdaEntry[BacklogPublisher] = LambdaEntry(BacklogPublisher)
