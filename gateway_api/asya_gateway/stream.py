"""The stream consumer: every change of a watched task record becomes a `status` event in the task's
live log (DynamoDB stream → Lambda), so watchers see changes no matter which writer made them
(gateway, sidecar, crew, backstop). Hooks on terminal envelopes are x-sink's job (it has the whole
envelope).

Only changes made while a watcher's mark held are logged (`asya.task_record.watched`): the log exists for
watchers, and a task nobody follows would otherwise pay a write per change for events no one reads.
Records created and ended are counted here (`TasksCreated`, `TasksFinished`), once per batch: whoever
made the record (the gateway, the first hop's claim of a task sent straight to a queue, a fan-out), and
at no cost per task to the writer.
Changes a watcher would not notice (bookkeeping only) are skipped. Events the log cannot take (DynamoDB
still throttling after the bounded retries of `asya.dynamo`) are reported as a partial batch failure
(`ReportBatchItemFailures`): the answer names the first record whose event is missing, the records
before it are done, and the event source delivers the batch again from that record (retried, then to
its dead-letter queue). Events of later records that did land are written again then: a watcher may
see the same status twice, never miss one. Any other error fails the whole batch, which is retried
the same way (bisecting).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asya import variables
from asya.dynamo import from_item
from asya.entry import LambdaEntry
from asya.fans import is_fan_item
from asya.live import STATUS, EventLog, EventsNotAppendedError
from asya.names import GATEWAY_STREAM
from asya.task_record import TERMINAL, watched
from asya.telemetry import Telemetry
from asya_gateway.task_input import without_input
from asya_gateway.views import task_view


@dataclass(frozen=True, slots=True)
class Change:
    """A record's change as a watcher sees it: its `status` event, and the outcome if the task just ended."""

    sequence_number: str
    event: tuple[str, str, Any]
    finished: str | None
    watched: bool
    created: bool = False  # the record is new: a task (through the gateway or sent to a queue) or a branch


def status_changes(records: list[dict[str, Any]]) -> list[Change]:
    changes: list[Change] = []
    for record in records:
        change = record.get("dynamodb", {})
        if record.get("eventName") not in ("INSERT", "MODIFY") or "NewImage" not in change:
            continue
        item = from_item(change["NewImage"])
        if is_fan_item(item):  # a wide fan-out's bucket or counter: its root's copy is what watchers see
            continue
        new = task_view(item)
        old = task_view(from_item(change["OldImage"])) if "OldImage" in change else None
        if old is not None and _visible(old) == _visible(new):
            continue
        ended = new["status"] in TERMINAL and (old is None or old["status"] not in TERMINAL)
        changes.append(
            Change(
                change["SequenceNumber"],
                (new["id"], STATUS, without_input(new)),
                new["status"] if ended else None,
                watched(item),
                created=old is None,
            )
        )
    return changes


def follow(records: list[dict[str, Any]], log: EventLog, telemetry: Telemetry) -> list[dict[str, str]]:
    """Log the batch's status events; returns the batch item failures to answer (empty: all done)."""
    changes = status_changes(records)
    logged = [change for change in changes if change.watched]
    failures: list[dict[str, str]] = []
    try:
        log.append(change.event for change in logged)
    except EventsNotAppendedError as error:
        first = changes.index(logged[min(error.missing)])
        telemetry.count("StatusErrors")
        telemetry.log_failure(
            "status events not logged; the stream delivers the batch again from the first missing one",
            error=str(error),
            sequence_number=changes[first].sequence_number,
        )
        failures = [{"itemIdentifier": changes[first].sequence_number}]
        changes = changes[:first]
    for change in changes:
        if change.created:
            telemetry.count("TasksCreated")
        if change.finished:
            telemetry.count("TasksFinished", "outcome", change.finished)
    return failures


def _visible(view: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in view.items() if key != "updated_at"}


class StreamConsumer:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.log = EventLog(str(variables.EVENTS_TABLE.require(env)))
        self.telemetry = Telemetry(variables.NAMESPACE.read(env), GATEWAY_STREAM)

    def handle(self, event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
        try:
            return {"batchItemFailures": follow(event.get("Records", []), self.log, self.telemetry)}
        finally:
            self.telemetry.flush()


lambda_handler: LambdaEntry[StreamConsumer] = LambdaEntry(lambda: StreamConsumer(os.environ))
