"""The mesh's queues as the gateway sends to them: each actor's URL found once, and every envelope
sealed (`asya.seal`), so that the actor it reaches takes it as a hop of a task the gateway made."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from botocore.exceptions import ClientError

from asya.clients import LazyClient
from asya.seal import EnvelopeSeal
from asya.tracecontext import trace_header, traceparent_of
from asya.transport import trace_attribute
from asya_gateway.task_error import TaskError

if TYPE_CHECKING:
    from types_boto3_sqs.client import SQSClient


class MeshQueues:
    """Shared by a service and its copies bound to callers."""

    client: LazyClient[SQSClient] = LazyClient("sqs")

    def __init__(
        self, client: SQSClient | None, namespace: str, queue_name: Callable[[str], str], seal: EnvelopeSeal
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.queue_name = queue_name
        self.seal = seal
        self.urls: dict[str, str] = {}

    def url(self, actor: str) -> str:
        """The actor's queue; a 400 if the namespace has none (a client named it)."""
        if actor not in self.urls:
            try:
                found = self.client.get_queue_url(QueueName=self.queue_name(actor))["QueueUrl"]
            except self.client.exceptions.QueueDoesNotExist:
                raise TaskError(400, f"no actor {actor!r} in namespace {self.namespace!r}") from None
            self.urls[actor] = found
        return self.urls[actor]

    def send(self, actor: str, body: str) -> None:
        """Send one envelope, sealed, with its trace as `AWSTraceHeader` (`asya.tracecontext`); the caller turns a
        failure into its answer."""
        sent: dict[str, Any] = {"QueueUrl": self.url(actor), "MessageBody": body}
        sent["MessageAttributes"] = self.seal.attributes(body)
        trace = trace_header(traceparent_of(orjson.loads(body)))
        if trace is not None:
            sent["MessageSystemAttributes"] = trace_attribute(trace)
        self.client.send_message(**sent)

    def send_or_503(self, actor: str, body: str) -> None:
        try:
            self.send(actor, body)
        except ClientError as exc:
            raise TaskError(503, f"the envelope could not be sent to {actor!r}: {exc}") from exc
