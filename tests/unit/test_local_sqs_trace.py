"""The local endpoint's SQS keeps a batch entry's `AWSTraceHeader` (`asya_local.endpoint.moto_sqs_trace`),
and the local event source passes it to the record, as Lambda does: the next hop is told its trace.
Asked of the endpoint's process, over HTTP, as the sidecar sends."""

from __future__ import annotations

import uuid

from asya.tracecontext import new_span_id, new_trace_id, trace_header
from asya.transport import trace_attribute
from asya_local.functions.lambda_shapes import sqs_event_from_messages
from asya_local.roles import local_client


def test_a_batch_entry_s_trace_header_reaches_the_record(patched_endpoint: str) -> None:
    sqs = local_client("sqs", patched_endpoint)
    queue = f"asya-unit-{uuid.uuid4().hex[:12]}"
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    header = trace_header(f"00-{new_trace_id()}-{new_span_id()}-01")
    assert header is not None
    entries = [
        {"Id": "traced", "MessageBody": "{}", "MessageSystemAttributes": trace_attribute(header)},
        {"Id": "plain", "MessageBody": "{}"},
    ]
    assert not sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")

    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
    records = sqs_event_from_messages(queue, messages)["Records"]
    assert sorted(str(record["attributes"].get("AWSTraceHeader")) for record in records) == sorted([header, "None"])
