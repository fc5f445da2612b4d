"""Received SQS messages as the records of the event Lambda's SQS event source would deliver.

Shared with the local stack's event source mappings (`asya_local.functions.lambda_shapes`), so a
container actor and a Lambda actor see one shape: the message's own attributes (receive count, sent
time) and its message attributes (the mesh's seal among them, `asya.seal`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any


def sqs_event(queue_arn: str, messages: Iterable[Mapping[str, Any]], sender: str = "") -> dict[str, Any]:
    """Receive with `AttributeNames=["All"]` and `MessageAttributeNames=["All"]` for every field."""
    region = queue_arn.split(":")[3] if queue_arn.count(":") >= 5 else ""
    return {"Records": [_record(queue_arn, region, message, sender) for message in messages]}


def _record(queue_arn: str, region: str, message: Mapping[str, Any], sender: str) -> dict[str, Any]:
    now_ms = str(int(time.time() * 1000))
    received = message.get("Attributes", {})
    attributes = {
        "ApproximateReceiveCount": str(received.get("ApproximateReceiveCount", "1")),
        "SentTimestamp": str(received.get("SentTimestamp", now_ms)),
        "SenderId": str(received.get("SenderId", sender)),
        "ApproximateFirstReceiveTimestamp": str(received.get("ApproximateFirstReceiveTimestamp", now_ms)),
    }
    if received.get("AWSTraceHeader"):  # the sender's trace, as Lambda passes it on (`asya.tracecontext`)
        attributes["AWSTraceHeader"] = str(received["AWSTraceHeader"])
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value.get("DataType", "String"),
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
