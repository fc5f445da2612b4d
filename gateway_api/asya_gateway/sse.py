"""Following a task live as Server-Sent Events, from the task record and its event log.

The first event is the task's current status; then every `status` and `fly` event in the order it
was appended, each with its cursor as the SSE `id`, until the task is terminal. A client that
reconnects with `Last-Event-ID` (or `?cursor=`) continues after that event.

The same generator serves both deployments:
- locally, the HTTP server writes each chunk as it comes, so one connection lasts until the end;
- on AWS, API Gateway REST buffers a Lambda's whole response, so the function answers as soon as it
  has something new (or after `max_seconds` of quiet) and ends the body with `retry:`; an
  `EventSource` (or `asya watch`) reconnects with `Last-Event-ID` and continues. That is long polling
  in SSE's own framing: an event reaches the watcher within a poll and a reconnect, not when the
  bounded follow ends.

Formatting SSE is a few lines, so no library is used for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from asya.envelope import utc_now
from asya.live import STATUS, Event, EventLog
from asya.task_record import TERMINAL, WATCH_SECONDS, watch_lapses_soon
from asya.task_store import TaskStore
from asya_gateway.views import task_view

POLL_SECONDS = 0.2
RECONNECT_MS = 500
# A bounded answer stops before this many bytes of events (it always carries at least one; an event
# is at most a DynamoDB item, 400 KB), far under Lambda's 6 MB response and API Gateway's 10 MB: the
# client continues from the last event it got.
RESPONSE_BUDGET_BYTES = 1_000_000


def sse(data: Any, event: str, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {orjson.dumps(data).decode()}\n\n"


def follow(
    tasks: TaskStore,
    events: EventLog,
    task_id: str,
    cursor: str | None,
    *,
    keepalive_seconds: float = 15.0,
    max_seconds: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock_ns: Callable[[], int] = time.time_ns,
) -> Iterator[str] | None:
    """SSE chunks for one task until it is terminal; None if the task is unknown. Bounded
    (`max_seconds` given), it ends with `retry:` after the first news or after `max_seconds` without
    any. Events reach the watcher once they have settled (`asya.live.SETTLE_SECONDS`), so a late write
    from another writer is never skipped.

    Following marks the task watched (`TaskStore.watch`): only then does the stream consumer log its
    status changes. A new watcher starts from the record the mark returns, so every change before the
    mark is in the first status and every change after it is in the log; a reconnecting watcher
    renews the mark only when it is about to lapse (a read per reconnect, a write per five minutes)."""
    if cursor is None:
        cursor = events.latest(task_id) or "0"  # first, so nothing after the status below is missed
        item = tasks.watch(task_id, utc_now())
        first = item
    else:
        item = tasks.get(task_id)
        if item is not None and watch_lapses_soon(item, utc_now()):
            tasks.watch(task_id, utc_now())
        first = None
    if item is None:
        return None
    return _events(
        tasks,
        events,
        task_id,
        cursor,
        first,
        keepalive_seconds=keepalive_seconds,
        max_seconds=max_seconds,
        sleep=sleep,
        clock_ns=clock_ns,
    )


def _events(
    tasks: TaskStore,
    events: EventLog,
    task_id: str,
    cursor: str,
    first: dict[str, Any] | None,
    *,
    keepalive_seconds: float,
    max_seconds: float | None,
    sleep: Callable[[float], None],
    clock_ns: Callable[[], int],
) -> Iterator[str]:
    bounded = max_seconds is not None
    reconnect = f"retry: {RECONNECT_MS}\n\n"
    started = time.monotonic()
    if first is not None:
        view = task_view(first)
        yield sse(view, STATUS, cursor)
        if view["terminal"]:
            return
        if bounded:
            yield reconnect
            return
    quiet_since = renewed = time.monotonic()
    while True:
        batch = events.after(task_id, cursor if cursor != "0" else None, now_ns=clock_ns())
        for event, chunk in _within(batch, RESPONSE_BUDGET_BYTES if bounded else None):
            cursor = event.seq
            yield chunk
            if event.kind == STATUS and event.data.get("status") in TERMINAL:
                return
        if batch and bounded:
            yield reconnect
            return
        now = time.monotonic()
        if now - renewed >= WATCH_SECONDS / 2:  # one connection outlasting its mark (locally)
            renewed = now
            tasks.watch(task_id, utc_now())
        if batch:
            quiet_since = now
        elif now - quiet_since >= keepalive_seconds:
            quiet_since = now
            item = tasks.get(task_id)  # a terminal event older than the cursor would never come again
            if item is not None and item.get("status") in TERMINAL:
                yield sse(task_view(item), STATUS, cursor)
                return
            yield ": keep-alive\n\n"
        if max_seconds is not None and now - started >= max_seconds:
            yield reconnect
            return
        sleep(POLL_SECONDS)


def _within(batch: list[Event], budget: int | None) -> list[tuple[Event, str]]:
    """The batch's events as SSE chunks, cut before the one that would pass `budget` bytes (the first
    always goes)."""
    chunks: list[tuple[Event, str]] = []
    size = 0
    for event in batch:
        chunk = sse(event.data, event.kind, event.seq)
        size += len(chunk)
        if budget is not None and chunks and size > budget:
            break
        chunks.append((event, chunk))
    return chunks
