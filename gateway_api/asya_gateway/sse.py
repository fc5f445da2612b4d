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

What a follow writes is its `Rendering`: SSE's own events by default (`GET .../events`); A2A's
streams (`asya_gateway.a2a_stream`) follow the same log and write JSON-RPC answers instead, and stop
where A2A's stream stops (`stop_at`: a task waiting for input too).

FLY events come one of two ways. Logged (`gateway.fly: log`), they are the log's, with cursors, and
settle like every other event. With FLY's fast lane (`gateway.fly: channel`, the default), the follow
is subscribed to the task's channel for as long as it lasts (`asya_gateway.fly_feed`) and hands each
FLY event on as it arrives, without an `id:` (a reconnect goes on from the log's cursor: FLY events
are not replayed); a bounded answer that has some ends `FLY_GATHER_SECONDS` after the first, so a
poller gets them within about a second. One writer's FLY events keep their order; a FLY event may come
before a status change stamped earlier, which has to settle first.

Formatting SSE is a few lines, so no library is used for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Generator, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from asya.envelope import parse_rfc3339, utc_now
from asya.live import FLY, SETTLE_SECONDS, STATUS, Event, EventLog
from asya.task_record import TERMINAL, WATCH_SECONDS, watch_lapses_soon
from asya.task_store import TaskStore
from asya_gateway.fly_feed import Feed
from asya_gateway.views import task_view

POLL_SECONDS = 0.2
RECONNECT_MS = 500
# A bounded answer stops before this many bytes of events (it always carries at least one; an event
# is at most a DynamoDB item, 400 KB), far under Lambda's 6 MB response and API Gateway's 10 MB: the
# client continues from the last event it got.
RESPONSE_BUDGET_BYTES = 1_000_000
# How late the stream consumer may stamp the event of a change it logs (DynamoDB Streams' delivery and
# its batch), and so how long after a record stopped a follower still waits for the log's events before
# it ends with the record's status.
STREAM_LAG_SECONDS = 5.0
ENDED_SECONDS = SETTLE_SECONDS + STREAM_LAG_SECONDS
# A bounded answer that has FLY events from the channel ends this long after the first of them: what
# follows it closely goes in the same answer, and a poller sees each within about a second.
FLY_GATHER_SECONDS = 0.5


def sse(data: Any, event: str | None, event_id: str | None = None) -> str:
    """One SSE event; without `event`, a plain `message` (what JSON-RPC streams send)."""
    head = f"id: {event_id}\n" if event_id else ""
    kind = f"event: {event}\n" if event else ""
    return f"{head}{kind}data: {orjson.dumps(data).decode()}\n\n"


class Rendering:
    """How a follow writes what it reads: here, the task's events as they are logged (`status`, `fly`),
    each with its cursor as the SSE `id`. A subclass writes them otherwise (A2A's JSON-RPC answers)."""

    keepalive = ": keep-alive\n\n"
    reconnect = f"retry: {RECONNECT_MS}\n\n"

    def status(self, view: dict[str, Any], cursor: str) -> str:
        """The task as it stands: the first event of a new watcher, and the last one of a follow that
        found the task ended (or at `stop_at`) without its event."""
        return sse(view, STATUS, cursor)

    def event(self, event: Event) -> str:
        return sse(event.data, event.kind, event.seq)


SSE = Rendering()


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
    rendering: Rendering = SSE,
    stop_at: Collection[str] = TERMINAL,
    long_poll: bool = True,
    feeds: Callable[[str], Feed | None] | None = None,
) -> Iterator[str] | None:
    """SSE chunks for one task until its status is one of `stop_at` (terminal); None if the task is
    unknown. Bounded (`max_seconds` given), it ends with `retry:` after the first news (`long_poll`;
    otherwise when the time is up or the answer has `RESPONSE_BUDGET_BYTES`) or after `max_seconds`
    without any. Events reach the watcher once they have settled (`asya.live.SETTLE_SECONDS`), so a
    late write from another writer is never skipped.

    Following marks the task watched (`TaskStore.watch`): only then does the stream consumer log its
    status changes. A new watcher starts from the record the mark returns, so every change before the
    mark is in the first status and every change after it is in the log; a reconnecting watcher
    renews the mark only when it is about to lapse (a read per reconnect, a write per five minutes).

    `feeds` subscribes to the task's FLY channel (FLY's fast lane), before anything is read, so that
    no FLY event emitted after the first status is missed."""
    feed = feeds(task_id) if feeds is not None else None
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
        if feed is not None:
            feed.close()
        return None
    options = _Options(keepalive_seconds, max_seconds, rendering, frozenset(stop_at), long_poll, feed)
    chunks = _followed(
        tasks, events, task_id, cursor, first, read=item, options=options, sleep=sleep, clock_ns=clock_ns
    )
    return chunks if feed is None else _closing(chunks, feed)


@dataclass(frozen=True, slots=True)
class _Options:
    keepalive_seconds: float
    max_seconds: float | None
    rendering: Rendering
    stop_at: frozenset[str]
    long_poll: bool
    feed: Feed | None = None


def _closing(chunks: Iterator[str], feed: Feed) -> Iterator[str]:
    """The follow's chunks; its FLY channel let go when the follow ends, however it ends."""
    try:
        yield from chunks
    finally:
        feed.close()


def _followed(
    tasks: TaskStore,
    events: EventLog,
    task_id: str,
    cursor: str,
    first: dict[str, Any] | None,
    *,
    read: dict[str, Any],
    options: _Options,
    sleep: Callable[[float], None],
    clock_ns: Callable[[], int],
) -> Iterator[str]:
    budget = RESPONSE_BUDGET_BYTES if options.max_seconds is not None else None
    if first is not None:
        view = task_view(first)
        chunk = options.rendering.status(view, cursor)
        yield chunk
        if view["status"] in options.stop_at:
            return
        if budget is not None and options.long_poll:
            yield options.rendering.reconnect
            return
        budget = None if budget is None else budget - len(chunk)
    yield from _logged(
        tasks, events, task_id, cursor, budget, read=read, options=options, sleep=sleep, clock_ns=clock_ns
    )


def _logged(
    tasks: TaskStore,
    events: EventLog,
    task_id: str,
    cursor: str,
    budget: int | None,
    *,
    read: dict[str, Any] | None,
    options: _Options,
    sleep: Callable[[float], None],
    clock_ns: Callable[[], int],
) -> Iterator[str]:
    """The task's log after `cursor`, until the task stops; bounded, within `budget` bytes (None:
    unbounded).

    A task that stopped while no one watched it has no stopping event in its log (the stream consumer
    logs the changes of watched tasks only): a follower that came after, with a cursor, ends with the
    record's status once the record has stopped for `ENDED_SECONDS` (`_stopped_and_settled`), where it
    used to wait for a keepalive's 15 s of quiet. The record as the follow read it (`read`) serves the
    first time the log has nothing new; after that it is read at most once per settle window."""
    render = options.rendering
    started = quiet_since = renewed = time.monotonic()
    checked_ns: int | None = None  # when the record was last read (`clock_ns`'s time)
    flying = _Flying(options.feed, task_id, render)
    while True:
        if (yield from flying.hand_on(budget)):
            return
        quiet_since = max(quiet_since, flying.last)
        read_ns = clock_ns()
        batch = events.after(task_id, cursor if cursor != "0" else None, now_ns=read_ns)
        chunks = _within(batch, budget, render)
        for event, chunk in chunks:
            cursor = event.seq
            yield chunk
            if event.kind == STATUS and event.data.get("status") in options.stop_at:
                return
        if budget is not None:
            budget -= sum(len(chunk) for _, chunk in chunks)
            if (batch and options.long_poll) or len(chunks) < len(batch) or budget < 0:
                yield render.reconnect  # the first news (long polling), or as much as one answer carries
                return
        now = time.monotonic()
        renewed = _renewed(tasks, task_id, renewed, now)
        if batch:
            quiet_since, checked_ns = now, read_ns
        else:
            if checked_ns is None or read_ns - checked_ns >= SETTLE_SECONDS * 1e9:
                checked_ns = read_ns
                item, read = read or tasks.get(task_id), None  # the follow's own read serves the first check
                if item is not None and _stopped_and_settled(item, options.stop_at, read_ns):
                    yield render.status(task_view(item), cursor)
                    return
            if now - quiet_since >= options.keepalive_seconds:
                quiet_since = now
                yield render.keepalive
        if options.max_seconds is not None and now - started >= options.max_seconds:
            yield render.reconnect
            return
        flying.wait(sleep)


def _renewed(tasks: TaskStore, task_id: str, renewed: float, now: float) -> float:
    """When the watch mark was last renewed: now, if one connection outlasted half of it (locally)."""
    if now - renewed < WATCH_SECONDS / 2:
        return renewed
    tasks.watch(task_id, utc_now())
    return now


@dataclass(slots=True)
class _Flying:
    """The FLY events a follow's channel brings (none without one), handed on as they come."""

    feed: Feed | None
    task_id: str
    render: Rendering
    first: float | None = None  # when this answer's first one came (`time.monotonic`)
    last: float = 0.0  # and its latest
    size: int = 0  # the bytes of them in this answer

    def hand_on(self, budget: int | None) -> Generator[str, None, bool]:
        """Yield what came since the last look, as chunks without a cursor; True when a bounded answer
        (`budget`) ends here: `FLY_GATHER_SECONDS` after its first FLY event, or at its budget."""
        for data in self.feed.take() if self.feed is not None else []:
            chunk = self.render.event(Event(self.task_id, "", FLY, data))
            self.size += len(chunk)
            self.last = time.monotonic()
            self.first = self.last if self.first is None else self.first
            yield chunk
        gathered = self.first is not None and time.monotonic() - self.first >= FLY_GATHER_SECONDS
        if budget is not None and (gathered or self.size > budget):
            yield self.render.reconnect  # a poller gets them now
            return True
        return False

    def wait(self, sleep: Callable[[float], None]) -> None:
        """Until the next poll of the log, or an earlier FLY event."""
        if self.feed is not None:
            self.feed.wait(POLL_SECONDS)
        else:
            sleep(POLL_SECONDS)


def _stopped_and_settled(item: dict[str, Any], stop_at: frozenset[str], read_ns: int) -> bool:
    """Whether the record is at a stop and was last written `ENDED_SECONDS` before the log was read at
    `read_ns`, so that read had every event of the task: a sidecar's, stamped before the stop, and the
    stream consumer's, stamped up to `STREAM_LAG_SECONDS` after the change it logs (a record without its
    moment is an old one)."""
    if item.get("status") not in stop_at:
        return False
    moment = parse_rfc3339(item.get("updated_at"))
    return moment is None or moment.timestamp() <= read_ns / 1e9 - ENDED_SECONDS


def _within(batch: list[Event], budget: int | None, render: Rendering) -> list[tuple[Event, str]]:
    """The batch's events as chunks, cut before the one that would pass `budget` bytes (the first
    always goes)."""
    chunks: list[tuple[Event, str]] = []
    size = 0
    for event in batch:
        chunk = render.event(event)
        size += len(chunk)
        if budget is not None and chunks and size > budget:
            break
        chunks.append((event, chunk))
    return chunks
