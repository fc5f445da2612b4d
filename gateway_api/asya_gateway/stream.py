"""The stream consumer: every change of a task record becomes a `status` event in the task's live log
(DynamoDB stream → Lambda), so watchers see changes no matter which writer made them (gateway,
sidecar, crew, backstop). Hooks on terminal envelopes are x-sink's job (it has the whole envelope).

Changes a watcher would not notice (bookkeeping only) are skipped; a batch whose events cannot be
written fails as a whole, and the event source retries it (bisecting, then to its dead-letter queue).
"""

from __future__ import annotations

import os
from typing import Any

from asya.live import STATUS, EventLog
from asya.status import TERMINAL, from_item
from asya.telemetry import Telemetry
from asya_gateway.views import task_view

_log: EventLog | None = None
_telemetry: Telemetry | None = None


def status_events(records: list[dict[str, Any]], telemetry: Telemetry) -> list[tuple[str, str, Any]]:
    events: list[tuple[str, str, Any]] = []
    for record in records:
        change = record.get("dynamodb", {})
        if record.get("eventName") not in ("INSERT", "MODIFY") or "NewImage" not in change:
            continue
        new = task_view(from_item(change["NewImage"]))
        old = task_view(from_item(change["OldImage"])) if "OldImage" in change else None
        if old is not None and _visible(old) == _visible(new):
            continue
        events.append((new["id"], STATUS, new))
        if new["status"] in TERMINAL and (old is None or old["status"] not in TERMINAL):
            telemetry.count("TasksFinished", "outcome", new["status"])
    return events


def _visible(view: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in view.items() if key != "updated_at"}


def lambda_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    global _log, _telemetry
    if _log is None or _telemetry is None:
        _log = EventLog(os.environ["ASYA_EVENTS_TABLE"])
        _telemetry = Telemetry(os.environ.get("ASYA_NAMESPACE", ""), "gateway-stream")
    try:
        _log.append(status_events(event.get("Records", []), _telemetry))
    finally:
        _telemetry.flush()
    return {"batchItemFailures": []}
