"""What Lambda hands a function (the SQS event shape, a context object with a running clock) and
what its SQS event source does with the answer.

Used wherever this machine stands in for the Lambda service (tests, the in-process mesh, the local
stack), so every one of them drives the real handler with the same shapes and rules as AWS does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"


@dataclass
class LambdaContext:
    """The attributes of the Lambda context object that the sidecar and Powertools read."""

    function_name: str
    timeout_seconds: float = 900.0
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._started + self.timeout_seconds - time.monotonic()) * 1000))


def queue_arn(queue: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}"


def sqs_record(queue: str, body: str, message_id: str | None = None, receive_count: int = 1) -> dict[str, Any]:
    """One record as the SQS event source mapping delivers it."""
    now_ms = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": str(uuid.uuid4()),
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": now_ms,
            "SenderId": ACCOUNT,
            "ApproximateFirstReceiveTimestamp": now_ms,
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn(queue),
        "awsRegion": REGION,
    }


def sqs_event_from_messages(queue: str, messages: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Turn `ReceiveMessage` results into the event Lambda would receive for them."""
    records = []
    for message in messages:
        record = sqs_record(
            queue,
            message["Body"],
            message["MessageId"],
            int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
        )
        record["receiptHandle"] = message["ReceiptHandle"]
        records.append(record)
    return {"Records": records}


def invoke_with_batch(
    handler: Callable[[dict[str, Any], Any], Any],
    sqs: Any,
    queue_url: str,
    messages: list[dict[str, Any]],
    context: LambdaContext,
) -> tuple[int, int]:
    """Invoke the function on one received batch, then delete every message its partial batch
    response does not list; returns (done, left for redelivery). If the function raises, nothing is
    deleted and the exception propagates: the batch comes back after the visibility timeout."""
    queue = queue_url.rsplit("/", 1)[-1]
    response = handler(sqs_event_from_messages(queue, messages), context)
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    done = [m for m in messages if m["MessageId"] not in failed]
    for start in range(0, len(done), 10):
        chunk = done[start : start + 10]
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)
    return len(done), len(failed)
