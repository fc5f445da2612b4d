"""What one task did in the in-process mesh (`asya_local.testing.harness`): the task as the gateway
reports it, and every envelope of it that a function was handed, in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asya.headers import ROOT_HEADER
from asya.names import CREW, SINK, SUMP
from asya_local.testing.inprocess import Delivery


def of_task(task_id: str, delivery: Delivery) -> bool:
    """The task's own envelope, or a branch of it (each branch carries its root's id)."""
    headers = delivery.envelope.get("headers")
    return delivery.envelope.get("id") == task_id or (isinstance(headers, dict) and headers.get(ROOT_HEADER) == task_id)


@dataclass(frozen=True)
class FlowRun:
    """`task`: what `GET /mesh/{id}` answers once the mesh is idle, the result as `output`;
    `deliveries`: each of its envelopes (its branches' too) handed to a function, retries included;
    `branches`: each fan-out branch's own task, as the gateway reports it."""

    task: dict[str, Any]
    deliveries: tuple[Delivery, ...]
    branches: tuple[dict[str, Any], ...] = ()

    @property
    def id(self) -> str:
        return str(self.task["id"])

    @property
    def status(self) -> str:
        """`succeeded`, `failed`, `canceled`, `paused`, or still `pending`/`running` when the mesh went
        idle without ending it (a branch waiting for a join that never came, say)."""
        return str(self.task["status"])

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @property
    def output(self) -> Any:
        """The payload the task ended with (a failed task's is its `error`)."""
        return self.task.get("output")

    @property
    def error(self) -> Any:
        """Why the task failed: its handler's exception type, message and traceback, or the mesh's
        reason (`reason`, e.g. a join that gave up, an envelope x-sump kept)."""
        return self.task.get("error")

    @property
    def actors(self) -> list[str]:
        """The actors that were handed one of the task's envelopes, in order, once per delivery (an
        envelope retried shows twice; a fan-out's branches each show): the route it took, a program's
        decisions included."""
        return [delivery.actor for delivery in self.deliveries if delivery.actor not in CREW]

    @property
    def retried(self) -> list[Delivery]:
        """Deliveries the function left in its queue to come again (its batch item failed, or it raised)."""
        return [delivery for delivery in self.deliveries if delivery.retried]

    @property
    def ended(self) -> list[dict[str, Any]]:
        """The envelopes that reached x-sink: one per branch that ended, with its `status` and `route`."""
        return self._handed_to(SINK)

    @property
    def kept_in_sump(self) -> list[dict[str, Any]]:
        """The envelopes x-sump kept (a malformed envelope, one redelivered past `max_receive_count`,
        a retry policy's last attempt), each with why under `status`/`error`."""
        return self._handed_to(SUMP)

    def _handed_to(self, crew: str) -> list[dict[str, Any]]:
        return [delivery.envelope for delivery in self.deliveries if delivery.actor == crew and not delivery.retried]
