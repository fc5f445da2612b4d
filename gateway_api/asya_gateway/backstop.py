"""The deadline backstop: fails every open task whose deadline passed, on a schedule.

It reads the tasks table's sparse `by-deadline` index (only open, unpaused tasks with a deadline are
in it), so it holds no timers and survives any restart: a missed run is caught up by the next one.
Envelopes of an expired task still in flight end at their next hop, whose deadline check fails them.
"""

from __future__ import annotations

from typing import Any

from asya.entry import LambdaEntry
from asya.envelope import utc_now
from asya.names import GATEWAY_BACKSTOP
from asya.task_store import TaskStore
from asya.telemetry import Telemetry
from asya_gateway.settings import GatewaySettings


class Backstop:
    def __init__(self, settings: GatewaySettings) -> None:
        self.store = TaskStore(settings.tasks_table, settings.task_ttl)
        self.telemetry = Telemetry(settings.namespace, GATEWAY_BACKSTOP)

    def handle(self, _event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
        expired = self.store.expire(utc_now())
        if expired:
            self.telemetry.count("TasksExpired", amount=len(expired))
            self.telemetry.logger.warning("tasks failed by the deadline backstop", extra={"tasks": expired})
        self.telemetry.flush()
        return {"expired": len(expired)}


lambda_handler: LambdaEntry[Backstop] = LambdaEntry(lambda: Backstop(GatewaySettings.from_env()))
