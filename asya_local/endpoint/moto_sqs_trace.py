"""Make moto's SQS keep a batch entry's `AWSTraceHeader`: `apply_trace_header_fix()` patches moto 5.2.5 in place.

SQS keeps the `MessageSystemAttributes` of each `SendMessageBatch` entry, as it keeps a `SendMessage`'s,
and hands `AWSTraceHeader` to whoever receives the message (Lambda's event source puts it in the
record's `attributes`). moto keeps it from `SendMessage` only: every envelope the sidecar sends goes in
a batch, so locally no message carried its task's trace on to the next hop.
"""

from __future__ import annotations

from typing import Any

from moto.sqs.models import Message, SQSBackend

TRACE_HEADER = "AWSTraceHeader"
_ORIGINAL_SEND_BATCH = SQSBackend.send_message_batch


def _send_message_batch(
    self: SQSBackend, queue_name: str, entries: dict[str, dict[str, Any]]
) -> tuple[list[Message], list[dict[str, Any]]]:
    """moto's batch send, then each sent message given its entry's system attributes (the message is
    the one the queue holds, so what a receive reads)."""
    sent, failed = _ORIGINAL_SEND_BATCH(self, queue_name, entries)
    by_id = {entry["Id"]: entry for entry in entries.values()}
    for message in sent:
        system = by_id[message.user_id].get("MessageSystemAttributes")  # type: ignore[attr-defined]
        if isinstance(system, dict) and TRACE_HEADER in system:
            message.system_attributes = {TRACE_HEADER: system[TRACE_HEADER]}
    return sent, failed


def apply_trace_header_fix() -> None:
    SQSBackend.send_message_batch = _send_message_batch  # type: ignore[method-assign]
