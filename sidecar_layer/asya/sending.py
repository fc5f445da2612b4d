"""Sending everything one batch produced: grouped by queue, the queues at once (`asya.together`), failed
entries retried; and bringing back early the records another delivery was running.

Shared by the sidecar and the crew so that both report a record as a batch item failure exactly when
one of its envelopes could not be sent, and both retry a concurrent duplicate when it can be settled.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asya.together import together
from asya.transport import OutgoingMessage, Transport

BACKOFF_SECONDS = 0.05
MAX_VISIBILITY_SECONDS = 43_200


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, once per output
class Delivery:
    owner: str  # the SQS message id of the record that produced it
    queue: str
    body: str
    delay: int = 0
    kind: str = "actor"
    # Sent only once every other delivery of its owner went. The record's own envelope moving on is
    # what marks its hop done (the next hop's claim on the task record), so a fan-out's branches must
    # all be out first: were the own envelope sent and a branch not, the record's redelivery would find
    # its hop passed and be dropped, and the branch would never be sent (docs/status.md).
    last: bool = False
    trace: str | None = None  # its `AWSTraceHeader` (`asya.tracecontext.trace_header`)


def send_all(
    transport: Transport, deliveries: Iterable[Delivery], attempts: int, on_sent: Callable[[Delivery], None]
) -> set[str]:
    """Send all deliveries; return the owners of those that still failed after `attempts` tries. An
    owner's `last` deliveries wait for its others (`Delivery.last`), and stay unsent if one failed."""
    deliveries = list(deliveries)
    with_others = {delivery.owner for delivery in deliveries if not delivery.last}
    if not with_others:  # the usual batch: no fan-out, each record's own envelope is all it sends
        return _send_round(transport, deliveries, attempts, on_sent)
    first = [d for d in deliveries if not d.last or d.owner not in with_others]
    then = [d for d in deliveries if d.last and d.owner in with_others]
    unsent = _send_round(transport, first, attempts, on_sent)
    return unsent | _send_round(transport, [d for d in then if d.owner not in unsent], attempts, on_sent)


def _send_round(
    transport: Transport, deliveries: Iterable[Delivery], attempts: int, on_sent: Callable[[Delivery], None]
) -> set[str]:
    by_entry: dict[str, Delivery] = {}
    pending: defaultdict[str, list[OutgoingMessage]] = defaultdict(list)
    for index, delivery in enumerate(deliveries):
        entry_id = f"e{index}"
        by_entry[entry_id] = delivery
        pending[delivery.queue].append(OutgoingMessage(entry_id, delivery.body, delivery.delay, delivery.trace))
    for attempt in range(attempts):
        if attempt:
            time.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
        retry: defaultdict[str, list[OutgoingMessage]] = defaultdict(list)
        queues = list(pending.items())
        sends = [lambda queue=queue, messages=messages: transport.send(queue, messages) for queue, messages in queues]
        for (queue, messages), failed in zip(queues, together(sends), strict=True):
            for message in messages:
                if message.entry_id in failed:
                    retry[queue].append(message)
                else:
                    on_sent(by_entry[message.entry_id])
        pending = retry
        if not pending:
            return set()
    return {by_entry[m.entry_id].owner for messages in pending.values() for m in messages}


def return_when_free(transport: Transport, records: Iterable[Mapping[str, Any]], held_until: Mapping[str, int]) -> None:
    """Records left for redelivery because another delivery holds their hop (`held_until`: message
    id → when that claim lapses, epoch ms) come back a second after it lapses, when the hop is
    settled one way or the other, instead of after the queue's visibility timeout (six function
    timeouts: half an hour for the crew). Each return is a receive, so it is not made sooner."""
    now_ms = time.time() * 1000
    by_queue: defaultdict[str, list[tuple[str, int]]] = defaultdict(list)
    for record in records:
        until = held_until.get(str(record.get("messageId")))
        if until is None:
            continue
        seconds = min(MAX_VISIBILITY_SECONDS, max(1, math.ceil((until - now_ms) / 1000) + 1))
        queue = str(record.get("eventSourceARN", "")).rsplit(":", 1)[-1]
        by_queue[queue].append((str(record.get("receiptHandle")), seconds))
    for queue, receipts in by_queue.items():
        transport.return_after(queue, receipts)
