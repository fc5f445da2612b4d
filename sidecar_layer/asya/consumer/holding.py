"""The messages a consumer process holds, kept invisible while their hops run.

Lambda's event source keeps a batch's messages invisible for the queue's visibility timeout and the
function cannot outlive 15 minutes; a container hop may run for hours, so a heartbeat thread extends
every held message's visibility by the queue's timeout each third of it (`ChangeMessageVisibility`).
The heartbeats live in the process that runs the hops: a process that dies stops them, and what it
held comes back to its queue within one visibility timeout, to be run again (nothing deleted yet).
The same beat renews the held hops' claims (`asya.claim_leases`), so they lapse with the messages.

The beats end with the batch's time: a Lambda invocation is ended at its timeout whatever its handler
does, while a handler stuck where the sidecar's timer cannot reach it (a call into C that never
returns, a handler that swallows its stop) would otherwise keep its messages hidden for up to SQS's
12 hours. A batch still held one visibility timeout past its time limit is overdue: the beat calls
`on_overdue` (the consumer ends its process) instead of extending it, and its messages come back.

A message the sidecar gives a visibility of its own while its batch runs (a hop another delivery
holds, returned when that claim lapses: `asya.sending.return_when_free`) is let go first: a beat
must not overwrite that visibility with its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asya.claim_leases import ClaimLeases

LOG = logging.getLogger("asya.consumer")
SQS_BATCH = 10  # entries per ChangeMessageVisibilityBatch / DeleteMessageBatch


class Holding:
    def __init__(self, sqs: Any, queue_url: str, visibility: int, on_overdue: Callable[[], None]) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self.visibility = visibility
        self.leases = ClaimLeases(visibility * 1000)
        self._on_overdue = on_overdue
        self._held: dict[str, str] = {}  # message id -> receipt handle
        self._overdue_at: float | None = None  # monotonic: the held batch's time limit and one visibility timeout
        self._lock = threading.Lock()
        self._beating = threading.Lock()  # held through a beat: `let_go` waits for the one under way
        self._stopped = threading.Event()
        self._beats = threading.Thread(target=self._beat, name="asya-heartbeat", daemon=True)
        self._beats.start()

    def hold(self, messages: Iterable[Mapping[str, Any]], time_limit: float) -> None:
        """Keep a batch's messages hidden while it runs, for at most `time_limit` seconds (its clock's)
        and one visibility timeout more."""
        with self._lock:
            self._held.update((message["MessageId"], message["ReceiptHandle"]) for message in messages)
            self._overdue_at = time.monotonic() + time_limit + self.visibility

    def let_go(self, message_ids: Iterable[str]) -> None:
        """Stop extending these messages' visibility (deleted, or left to come back as they are, or
        given a visibility of the sidecar's own); a beat under way ends first, so none follows."""
        with self._beating, self._lock:
            for message_id in message_ids:
                self._held.pop(message_id, None)

    def release_all(self) -> int:
        """Make every held message visible again at once (visibility 0); returns how many."""
        with self._beating, self._lock:
            held, self._held = self._held, {}
        self._change(held, 0)
        return len(held)

    def stop(self) -> None:
        self._stopped.set()

    def _beat(self) -> None:
        while not self._stopped.wait(max(self.visibility / 3, 0.1)):
            if not self.beat():
                return

    def beat(self) -> bool:
        """One heartbeat: extend what is held and renew its claims; False if the batch was overdue
        instead (`on_overdue` was called)."""
        with self._beating:  # the visibility change only: `let_go` waits for it, not for the renewals
            with self._lock:
                held, overdue_at = dict(self._held), self._overdue_at
            overdue = bool(held) and overdue_at is not None and time.monotonic() > overdue_at
            if not overdue:
                self._change(held, self.visibility)
        if overdue:
            self._on_overdue()
            return False
        self.leases.renew()
        return True

    def _change(self, held: Mapping[str, str], seconds: int) -> None:
        items = list(held.items())
        for start in range(0, len(items), SQS_BATCH):
            entries = [
                {"Id": str(index), "ReceiptHandle": receipt, "VisibilityTimeout": seconds}
                for index, (_id, receipt) in enumerate(items[start : start + SQS_BATCH])
            ]
            try:
                failed = self._sqs.change_message_visibility_batch(QueueUrl=self._queue_url, Entries=entries)
            except Exception as exc:  # noqa: BLE001 - the next beat tries again; a lapse only risks a redelivery
                LOG.warning("visibility of %d messages not changed: %s", len(entries), exc)
                continue
            for failure in failed.get("Failed", []):
                LOG.warning("visibility of a message not changed: %s", failure.get("Message", failure.get("Code")))
