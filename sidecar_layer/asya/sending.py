"""Sending everything one batch produced: grouped by queue, failed entries retried.

Shared by the sidecar and the crew so that both report a record as a batch item failure exactly when
one of its envelopes could not be sent.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from asya.transport import OutgoingMessage, Transport

BACKOFF_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Delivery:
    owner: str  # the SQS message id of the record that produced it
    queue: str
    body: str
    delay: int = 0
    kind: str = "actor"


def send_all(
    transport: Transport, deliveries: Iterable[Delivery], attempts: int, on_sent: Callable[[Delivery], None]
) -> set[str]:
    """Send all deliveries; return the owners of those that still failed after `attempts` tries."""
    by_entry: dict[str, Delivery] = {}
    pending: defaultdict[str, list[OutgoingMessage]] = defaultdict(list)
    for index, delivery in enumerate(deliveries):
        entry_id = f"e{index}"
        by_entry[entry_id] = delivery
        pending[delivery.queue].append(OutgoingMessage(entry_id, delivery.body, delivery.delay))
    for attempt in range(attempts):
        if attempt:
            time.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
        retry: defaultdict[str, list[OutgoingMessage]] = defaultdict(list)
        for queue, messages in pending.items():
            failed = transport.send(queue, messages)
            for message in messages:
                if message.entry_id in failed:
                    retry[queue].append(message)
                else:
                    on_sent(by_entry[message.entry_id])
        pending = retry
        if not pending:
            return set()
    return {by_entry[m.entry_id].owner for messages in pending.values() for m in messages}
