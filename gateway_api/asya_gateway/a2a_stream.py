"""A2A's streams: `message/stream` and `tasks/resubscribe` (A2A 1.0's `SendStreamingMessage` and
`SubscribeToTask`), a task followed as `asya_gateway.sse` follows it, written as JSON-RPC answers.

The follow is the one every watcher of the task uses (its record, then its live log, `sse.follow`);
only what it writes differs (`JsonRpcRendering`): each event is an SSE `data:` line holding one
JSON-RPC answer to the request, its `id:` the log's cursor. What each answer holds is A2A's, made by
`asya_gateway.a2a` (`Updates`): first the task as it stands, then a status update for each change of
its status and each FLY event, and for a task that succeeded, its output as an artifact update before
the last status update. A2A's stream ends where the task stops moving on its own: when it has ended,
or when it waits for a person's input (`paused`, A2A's `input-required`); a message naming the task
resumes it (docs/a2a.md).

Locally the gateway's server writes each answer as it comes; on AWS the function answers once, so the
follow is bounded (`max_seconds`) and the client resubscribes to go on (docs/a2a.md, "Streaming").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from asya.live import FLY, STATUS, Event
from asya.task_record import TERMINAL, TaskStatus
from asya_gateway.fly_feed import Feed
from asya_gateway.service import TaskService
from asya_gateway.sse import Rendering, follow, sse

# where an A2A stream ends: the task has ended, or it waits for input (a message resumes it)
STOP_AT = frozenset({*TERMINAL, TaskStatus.PAUSED.value})


class Updates(Protocol):
    """What the answers of one stream hold, in the version the request spoke (`asya_gateway.a2a`)."""

    def task(self, view: dict[str, Any]) -> dict[str, Any]:
        """The stream's first answer: the task as it stands (with its output if it succeeded)."""

    def changed(self, view: dict[str, Any]) -> list[dict[str, Any]]:
        """The answers for a change of status: the status update, after the output's artifact update
        when the task succeeded."""

    def fly(self, data: dict[str, Any]) -> dict[str, Any]:
        """The answer for a FLY event (`{"id", "actor", "data"}` as the log keeps it)."""


class JsonRpcRendering(Rendering):
    """The follow's events as JSON-RPC answers to the request `request_id`, one per SSE event."""

    def __init__(self, request_id: str | int, updates: Updates) -> None:
        self.request_id = request_id
        self.updates = updates
        self.started = False

    def status(self, view: dict[str, Any], cursor: str) -> str:
        if not self.started:
            self.started = True
            return self._answers([self.updates.task(view)], cursor)
        return self._answers(self.updates.changed(view), cursor)

    def event(self, event: Event) -> str:
        self.started = True
        if event.kind == STATUS:
            return self._answers(self.updates.changed(event.data), event.seq)
        if event.kind == FLY and isinstance(event.data, dict):
            return self._answers([self.updates.fly(event.data)], event.seq)
        return ""  # a kind of event A2A has no answer for

    def _answers(self, results: list[dict[str, Any]], cursor: str) -> str:
        return "".join(
            sse({"jsonrpc": "2.0", "id": self.request_id, "result": result}, None, cursor) for result in results
        )


def stream(
    service: TaskService,
    task_id: str,
    cursor: str | None,
    rendering: JsonRpcRendering,
    max_seconds: float | None,
    *,
    feeds: Callable[[str], Feed | None] | None,
) -> Iterator[str] | None:
    """The answers for one task until it stops (`STOP_AT`), from `cursor` on (the task as it stands
    first when None); None if the task is unknown. Bounded by `max_seconds` when given: the stream then
    ends with `retry:`, and the client resubscribes. `feeds`: how the follow subscribes to the task's FLY
    channel (`asya_gateway.fly_feed`), when it has one."""
    return follow(
        service.tasks,
        service.events,
        task_id,
        cursor,
        max_seconds=max_seconds,
        rendering=rendering,
        stop_at=STOP_AT,
        long_poll=False,
        feeds=feeds,
    )
