"""The local endpoint refuses at send the bodies SQS refuses (`asya_local.endpoint.moto_sqs_bodies`), whole, so a
producer sees AWS's error and the queue never holds a message moto could not hand out again. Asked of
the endpoint's process, over HTTP, as the mesh's producers ask it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya_local.roles import local_client

LIMIT = 1_048_576


@pytest.fixture
def queue(patched_endpoint: str) -> tuple[Any, str]:
    """A new queue of the endpoint, and a client of it."""
    sqs = local_client("sqs", patched_endpoint)
    return sqs, sqs.create_queue(QueueName=f"asya-unit-{uuid.uuid4().hex[:12]}")["QueueUrl"]


def _depth(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("", "MissingParameter"),
        ('{"id": "\ud800"}', "InvalidMessageContents"),
        ("a\x00b", "InvalidMessageContents"),
        ("\x1b[31m", "InvalidMessageContents"),
        ("\uffff", "InvalidMessageContents"),
        ("é" * (LIMIT // 2 + 1), "InvalidParameterValue"),  # within the limit in characters, not in bytes
    ],
    ids=["empty", "lone surrogate", "NUL", "escape", "U+FFFF", "over the limit in UTF-8 bytes"],
)
def test_a_body_sqs_refuses_is_refused_at_send_and_nothing_is_stored(
    queue: tuple[Any, str], body: str, code: str
) -> None:
    sqs, url = queue
    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    assert refused.value.response["Error"]["Code"] == code
    with pytest.raises(ClientError):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": "ok", "MessageBody": "fine"}, {"Id": "bad", "MessageBody": body}]
        )
    assert _depth(sqs, url) == 0


def test_every_character_sqs_allows_goes_through_and_comes_back(queue: tuple[Any, str]) -> None:
    sqs, url = queue
    body = "\t\n\r \x7f~\ud7ff\ue000\ufffd\U00010000\U0010ffff🙂" + "x" * (LIMIT - 40)
    assert len(body.encode("utf-8")) <= LIMIT
    sqs.send_message(QueueUrl=url, MessageBody=body)
    (message,) = sqs.receive_message(QueueUrl=url)["Messages"]
    assert message["Body"] == body


def test_the_size_limit_counts_the_message_attributes_as_sqs_does(queue: tuple[Any, str]) -> None:
    """A body at the limit goes alone, not with the seal the mesh puts on every message (`asya.seal`):
    the attribute's name, type and value count toward the same limit."""
    sqs, url = queue
    seal = {"asya-seal": {"DataType": "String", "StringValue": "s" * 43}}
    body = "x" * LIMIT
    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=seal)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
    sqs.send_message(QueueUrl=url, MessageBody=body[: LIMIT - 64], MessageAttributes=seal)
    sqs.send_message(QueueUrl=url, MessageBody=body)
    assert _depth(sqs, url) == 2
