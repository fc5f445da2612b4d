"""The deadline backstop: fails every open task whose deadline passed, on a schedule.

It reads the tasks table's sparse `by-deadline` index (only open, unpaused tasks with a deadline are
in it), so it holds no timers and survives any restart: a missed run is caught up by the next one.
Envelopes of an expired task still in flight end at their next hop, whose deadline check fails them.
"""

from __future__ import annotations

from typing import Any

from asya.envelope import utc_now
from asya.status import TaskStore
from asya.telemetry import Telemetry
from asya_gateway.settings import GatewaySettings

_store: TaskStore | None = None
_telemetry: Telemetry | None = None


def lambda_handler(_event: dict[str, Any], _context: Any) -> dict[str, Any]:
    global _store, _telemetry
    if _store is None or _telemetry is None:
        settings = GatewaySettings.from_env()
        _store = TaskStore(settings.tasks_table, settings.task_ttl)
        _telemetry = Telemetry(settings.namespace, "gateway-backstop")
    expired = _store.expire(utc_now())
    if expired:
        _telemetry.count("TasksExpired", amount=len(expired))
        _telemetry.logger.warning("tasks failed by the deadline backstop", extra={"tasks": expired})
    _telemetry.flush()
    return {"expired": len(expired)}
