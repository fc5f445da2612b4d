"""Sending envelopes to queues.

`SqsTransport` is what runs on AWS and against the local endpoint (boto3 reads `AWS_ENDPOINT_URL`);
it seals every body it sends (`asya.seal`), so every sender of the mesh seals in one place.
`MemoryTransport` keeps messages in process: for unit tests of actors and for measuring the
sidecar without a network. Both take whole groups of messages, so callers never send one at a time.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from asya.clients import LazyClient
from asya.seal import SEAL_ROOM, EnvelopeSeal
from asya.together import together

if TYPE_CHECKING:
    from types_boto3_sqs.client import SQSClient

LOGGER = logging.getLogger(__name__)
SQS_BATCH_ENTRIES = 10
SQS_MAX_DELAY_SECONDS = 900
SQS_QUEUE_NAME_MAX = 80
_NO_SUCH_QUEUE = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}  # query and JSON protocols


def trace_attribute(trace: str) -> dict[str, Any]:
    """SQS's `MessageSystemAttributes` carrying an `AWSTraceHeader` (`asya.tracecontext.trace_header`)."""
    return {"AWSTraceHeader": {"DataType": "String", "StringValue": trace}}


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    entry_id: str
    body: str
    delay_seconds: int = 0
    trace: str | None = None  # SQS's `AWSTraceHeader` (`asya.tracecontext.trace_header`): the envelope's trace


class Transport(Protocol):
    def send(self, queue: str, messages: Sequence[OutgoingMessage]) -> set[str]:
        """Send to the named queue; return the entry ids that could not be sent."""
        ...

    def has_queue(self, queue: str) -> bool:
        """False only when the queue is known not to exist: a send to it could never succeed."""
        ...

    def return_after(self, queue: str, receipts: Sequence[tuple[str, int]]) -> None:
        """Make received messages (receipt handle, seconds) visible again after those seconds."""
        ...


class SqsTransport:
    """`SendMessageBatch` in chunks of at most 10 entries and at most `max_batch_bytes` of messages,
    sent at once, each message sealed with `seal` (when it has a key)."""

    client: LazyClient[SQSClient] = LazyClient("sqs")

    def __init__(
        self, client: SQSClient | None = None, max_batch_bytes: int = 1_048_576, seal: EnvelopeSeal | None = None
    ) -> None:
        self._client = client
        self._max_batch_bytes = max_batch_bytes
        self.seal = seal or EnvelopeSeal(None)
        self._queue_urls: dict[str, str] = {}

    def queue_url(self, queue: str) -> str:
        """Resolved once per execution environment: a lookup per send would double the API calls."""
        url = self._queue_urls.get(queue)
        if url is None:
            url = self._queue_urls[queue] = self.client.get_queue_url(QueueName=queue)["QueueUrl"]
        return url

    def has_queue(self, queue: str) -> bool:
        """Answered by the same cached lookup the send makes. Only SQS's "no such queue" is a no: any
        other failure (throttling, a network error) is left to the send, which retries it."""
        try:
            self.queue_url(queue)
        except Exception as exc:  # noqa: BLE001 - botocore's ClientError, or a transport failure
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            return code not in _NO_SUCH_QUEUE
        return True

    def return_after(self, queue: str, receipts: Sequence[tuple[str, int]]) -> None:
        """Best effort, ten at a time: a message this misses comes back after the queue's visibility
        timeout, later but not lost."""
        try:
            url = self.queue_url(queue)
            for start in range(0, len(receipts), SQS_BATCH_ENTRIES):
                entries: list[Any] = [
                    {"Id": f"r{index}", "ReceiptHandle": receipt, "VisibilityTimeout": seconds}
                    for index, (receipt, seconds) in enumerate(receipts[start : start + SQS_BATCH_ENTRIES])
                ]
                self.client.change_message_visibility_batch(QueueUrl=url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - the messages still come back, at the visibility timeout
            LOGGER.warning("could not bring %d message(s) of %s back early: %s", len(receipts), queue, exc)

    def send(self, queue: str, messages: Sequence[OutgoingMessage]) -> set[str]:
        """The chunks go at once (`asya.together`): a wide fan's sends take one call's time, not one
        per ten envelopes."""
        try:
            url = self.queue_url(queue)
        except Exception as exc:  # noqa: BLE001 - a queue that cannot be resolved fails its messages, retried later
            LOGGER.warning("could not resolve queue %s: %s", queue, exc)
            return {message.entry_id for message in messages}
        room = SEAL_ROOM if self.seal.enabled else 0
        chunks = list(_chunks(messages, self._max_batch_bytes, room))
        sends = [lambda chunk=chunk: self._send_chunk(queue, url, chunk, room) for chunk in chunks]
        return set().union(*together(sends))

    def _send_chunk(self, queue: str, url: str, chunk: list[OutgoingMessage], room: int) -> set[str]:
        """One `SendMessageBatch`; the entry ids it did not send."""
        entries: list[Any] = [{"Id": m.entry_id, "MessageBody": m.body, "DelaySeconds": m.delay_seconds} for m in chunk]
        for entry, message in zip(entries, chunk, strict=True):
            if message.trace is not None:  # a system attribute: not counted in the message's size
                entry["MessageSystemAttributes"] = trace_attribute(message.trace)
        if room:
            for entry in entries:
                entry["MessageAttributes"] = self.seal.attributes(entry["MessageBody"])
        try:
            response = self.client.send_message_batch(QueueUrl=url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - botocore already retried; report the chunk as not sent
            LOGGER.warning("could not send %d message(s) to %s: %s", len(chunk), queue, exc)
            return {m.entry_id for m in chunk}
        return {entry["Id"] for entry in response.get("Failed", [])}


def _chunks(messages: Sequence[OutgoingMessage], max_bytes: int, room: int = 0) -> Iterator[list[OutgoingMessage]]:
    """`room`: what each message's attributes add to its size."""
    chunk: list[OutgoingMessage] = []
    size = 0
    for message in messages:
        body_size = len(message.body.encode()) + room
        if chunk and (len(chunk) == SQS_BATCH_ENTRIES or size + body_size > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(message)
        size += body_size
    if chunk:
        yield chunk


class MemoryTransport:
    """Messages kept in lists per queue name; `fail_entries` lets a test make chosen sends fail,
    `missing_queues` names queues that do not exist, `returned` keeps what was brought back early."""

    def __init__(self) -> None:
        self.queues: dict[str, list[OutgoingMessage]] = defaultdict(list)
        self.fail_entries: set[str] = set()
        self.missing_queues: set[str] = set()
        self.returned: dict[str, list[tuple[str, int]]] = defaultdict(list)

    def has_queue(self, queue: str) -> bool:
        return queue not in self.missing_queues

    def return_after(self, queue: str, receipts: Sequence[tuple[str, int]]) -> None:
        self.returned[queue].extend(receipts)

    def send(self, queue: str, messages: Sequence[OutgoingMessage]) -> set[str]:
        if queue in self.missing_queues:
            return {m.entry_id for m in messages}
        failed = {m.entry_id for m in messages if m.entry_id in self.fail_entries}
        self.queues[queue].extend(m for m in messages if m.entry_id not in failed)
        return failed
