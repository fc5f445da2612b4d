"""Make moto's SQS refuse the message bodies SQS refuses: `apply_body_fix()` patches moto 5.2.5 in place.

SQS refuses at send a body that is empty, longer than the queue's `MaximumMessageSize` in UTF-8 bytes, or
holding a character outside its set (`#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF`).
moto 5.2.5 takes them all and counts the size in characters. The worst of it: a body sent with a lone
surrogate escape (`"\\ud800"` in the JSON request, which botocore writes for a Python string holding one)
is stored, and every later `ReceiveMessage` on that queue fails with a 500 while moto computes its MD5, so
one such message stops the whole queue. With the fix a producer gets the error it would get from AWS,
and nothing of the message is stored. The size SQS limits is the body's and its message attributes'
together (the mesh's seal is one, `asya.seal`): moto counts neither, the fix counts both.
"""

from __future__ import annotations

import re
from typing import Any

from moto.sqs.exceptions import InvalidParameterValue, MissingParameter, SQSException
from moto.sqs.models import Queue, SQSBackend

# A character SQS does not carry; lone surrogates are in the excluded range D800-DFFF.
OUTSIDE_SQS_SET = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ORIGINAL_VALIDATE = SQSBackend._validate_message
_ORIGINAL_SEND = SQSBackend.send_message


class InvalidMessageContents(SQSException):
    def __init__(self, character: str) -> None:
        super().__init__(
            "InvalidMessageContents",
            f"Invalid binary character '#x{ord(character):X}' was found in the message body, the set of allowed "
            "characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
        )


def refusal(body: str, maximum_size: int, attribute_bytes: int = 0) -> SQSException | None:
    """The error SQS answers a send of this body (and `attribute_bytes` of message attributes) with, or
    None if it takes it."""
    if not body:
        return MissingParameter("MessageBody")
    outside = OUTSIDE_SQS_SET.search(body)
    if outside:
        return InvalidMessageContents(outside.group())
    if len(body.encode("utf-8")) + attribute_bytes > maximum_size:
        return InvalidParameterValue(
            f"One or more parameters are invalid. Reason: Message must be shorter than {maximum_size} bytes."
        )
    return None


def _validate_message(self: SQSBackend, queue: Queue, message_body: str, *args: Any, **kwargs: Any) -> None:
    error = refusal(message_body, int(queue.maximum_message_size))  # type: ignore[attr-defined]
    if error is not None:
        raise error
    _ORIGINAL_VALIDATE(self, queue, message_body, *args, **kwargs)


def attributes_size(message_attributes: Any) -> int:
    """What message attributes count toward a message's size: each name, type and value, in bytes."""
    if not isinstance(message_attributes, dict):
        return 0
    size = 0
    for name, value in message_attributes.items():
        size += len(str(name).encode())
        if isinstance(value, dict):
            size += sum(len(str(part).encode()) for part in value.values() if isinstance(part, str))
    return size


def _send_message(self: SQSBackend, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
    attributes = kwargs.get("message_attributes", args[0] if args else None)
    if attributes:
        queue = self.get_queue(queue_name)
        error = refusal(message_body, int(queue.maximum_message_size), attributes_size(attributes))  # type: ignore[attr-defined]
        if error is not None:
            raise error
    return _ORIGINAL_SEND(self, queue_name, message_body, *args, **kwargs)


def apply_body_fix() -> None:
    """Patch moto's SQS send validation in this process (idempotent); covers SendMessage and SendMessageBatch."""
    if getattr(SQSBackend, "_asya_body_fix", False):
        return
    setattr(SQSBackend, "_validate_message", _validate_message)  # noqa: B010 - mypy: no method-assign
    setattr(SQSBackend, "send_message", _send_message)  # noqa: B010
    setattr(SQSBackend, "_asya_body_fix", True)  # noqa: B010
