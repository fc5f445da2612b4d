"""Following a task: its live events as Server-Sent Events (`GET .../events`), the follow ticket a browser
follows it with (`POST .../ticket`, `GET /follow/{id}`), and the stream the local server serves itself
(`open_event_stream`). Routes of the API function (`asya_gateway.api`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Header, Query

from asya.envelope import rfc3339
from asya.live import CURSOR_PATTERN
from asya_gateway.api_models import EVENT_CURSOR, MAX_TASK_ID, EventCursor, TaskId
from asya_gateway.callers import OPERATOR, Caller
from asya_gateway.request_context import API, LAMBDA_FOLLOW_SECONDS, base_url, built_function, caller, service
from asya_gateway.resolver import app
from asya_gateway.task_error import TaskError
from asya_gateway.tickets import FOLLOW_PREFIX, MAX_TICKET, follow_url

LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", pattern=CURSOR_PATTERN, max_length=64)]


@app.get(f"{API}/mesh/<task_id>/events", summary="Follow a task (Server-Sent Events)")
def task_events(task_id: TaskId, cursor: EventCursor = None, last_event_id: LastEventId = None) -> Response[str]:
    return _events(task_id, last_event_id or cursor)


@app.post(
    f"{API}/mesh/<task_id>/ticket",
    summary="A ticket a browser follows the task with, for a few minutes (`asya_gateway.tickets`)",
)
def follow_ticket(task_id: TaskId) -> dict[str, Any]:
    service().view(task_id)  # a task the caller may not see is "no task" (404), as everywhere
    ticket, expires = built_function().tickets.issue(task_id, caller())
    return {
        "ticket": ticket,
        "expires_at": rfc3339(dt.datetime.fromtimestamp(expires, dt.UTC)),
        "follow_url": follow_url(base_url(), task_id, ticket),
    }


@app.get(f"{FOLLOW_PREFIX}<task_id>", summary="Follow a task with a ticket, as a browser's EventSource does")
def task_events_ticketed(
    task_id: TaskId,
    ticket: Annotated[str, Query(min_length=1, max_length=MAX_TICKET, description="What POST .../ticket answered")],
    cursor: EventCursor = None,
    last_event_id: LastEventId = None,
) -> Response[str]:
    """The caller is the ticket's (`GatewayFunction.caller_of` opened it before routing): the route
    declares `ticket` for the API's validation and its document only."""
    del ticket
    return _events(task_id, last_event_id or cursor)


def _events(task_id: str, cursor: str | None) -> Response[str]:
    chunks = open_event_stream(task_id, cursor, max_seconds=LAMBDA_FOLLOW_SECONDS, caller=caller())
    if chunks is None:
        raise TaskError(404, f"no task {task_id!r}")
    return Response(
        status_code=200,
        content_type="text/event-stream",
        body="".join(chunks),
        headers={"Cache-Control": "no-cache"},
    )


def open_event_stream(
    task_id: str,
    last_event_id: str | None,
    keepalive_seconds: float = 15.0,
    max_seconds: float | None = None,
    caller: Caller = OPERATOR,
) -> Iterator[str] | None:
    """SSE chunks for a task (None if it is unknown, or not `caller`'s); the local HTTP server streams
    them as they come. It checks the id and cursor as the REST route does, since the local server calls
    it directly, outside any request of the resolver's, with the caller `sign_in` gave it."""
    if last_event_id is not None and not EVENT_CURSOR.fullmatch(last_event_id):
        raise TaskError(422, f"Last-Event-ID (or cursor): {last_event_id[:80]!r} is not an event's id")
    if len(task_id) > MAX_TASK_ID:
        raise TaskError(422, f"task_id: at most {MAX_TASK_ID} characters, got {len(task_id)}")
    tasks = built_function().service.as_caller(caller)
    return tasks.follow(task_id, last_event_id, keepalive_seconds=keepalive_seconds, max_seconds=max_seconds)
