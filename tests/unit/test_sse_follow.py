"""Following a task as SSE on AWS is long polling: API Gateway buffers a Lambda's whole answer, so a
bounded follow must answer at the first news rather than hold every event until its time is up."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

from asya.envelope import utc_now
from asya.live import FLY, SETTLE_SECONDS, EventLog
from asya.task_record import WATCH_SECONDS, Report, watched
from asya.task_store import TaskStore
from asya_gateway import sse
from asya_gateway.api import LAMBDA_FOLLOW_SECONDS
from asya_gateway.sse import ENDED_SECONDS, POLL_SECONDS, RESPONSE_BUDGET_BYTES, follow
from asya_local.functions.gateway_server import INTEGRATION_TIMEOUT_SECONDS
from asya_local.testing.tables import EVENTS


def settled() -> int:
    """A clock far enough ahead that every event appended so far has settled."""
    return time.time_ns() + int(2 * SETTLE_SECONDS * 1e9)


def followed(*arguments: Any, **options: Any) -> list[str]:
    stream = follow(*arguments, **options)
    assert stream is not None, "the task is known"
    return list(stream)


@pytest.fixture
def stores(task_store: TaskStore) -> tuple[TaskStore, EventLog]:
    task_store.create({"id": "t1"})
    return task_store, EventLog(EVENTS, client=task_store.client)


def test_a_bounded_follow_answers_with_the_current_status_then_asks_to_reconnect(
    stores: tuple[TaskStore, EventLog],
) -> None:
    tasks, events = stores
    chunks = followed(tasks, events, "t1", None, max_seconds=20, sleep=lambda _: None)
    assert chunks[0].startswith("id: 0\nevent: status\n")
    assert chunks[1:] == ["retry: 500\n\n"]


def test_following_marks_the_task_watched_so_its_changes_are_logged_from_then_on(
    stores: tuple[TaskStore, EventLog],
) -> None:
    tasks, events = stores
    before = tasks.get("t1")
    assert before is not None
    assert not watched(before)
    followed(tasks, events, "t1", None, max_seconds=20, sleep=lambda _: None)
    tasks.report(Report("t1", "a", {"prev": [], "curr": "a", "next": ["b"]}, "received", 0.0))
    after = tasks.get("t1")
    assert after is not None
    assert after["status"] == "running"
    assert watched(after)


def test_a_reconnecting_watcher_renews_its_mark_only_when_it_is_about_to_lapse(
    stores: tuple[TaskStore, EventLog],
) -> None:
    tasks, events = stores
    writes: list[str] = []
    mark = tasks.watch

    def counted(task_id: str, now: dt.datetime) -> dict[str, Any] | None:
        writes.append(task_id)
        return mark(task_id, now)

    tasks.watch = counted  # type: ignore[method-assign]
    followed(tasks, events, "t1", None, max_seconds=20, sleep=lambda _: None)
    followed(tasks, events, "t1", "0", max_seconds=0, sleep=lambda _: None)
    assert writes == ["t1"]  # the reconnect found the mark with most of its time left
    mark("t1", utc_now() - dt.timedelta(seconds=WATCH_SECONDS * 0.6))  # a mark with 40 % of its time left
    followed(tasks, events, "t1", "0", max_seconds=0, sleep=lambda _: None)
    assert writes == ["t1", "t1"]  # renewed


def test_an_unknown_task_cannot_be_followed(stores: tuple[TaskStore, EventLog]) -> None:
    tasks, events = stores
    assert follow(tasks, events, "nobody", None) is None
    assert follow(tasks, events, "nobody", "0") is None
    assert tasks.get("nobody") is None  # the watch mark did not create a record


def test_a_bounded_follow_answers_at_the_first_news_after_the_cursor(stores: tuple[TaskStore, EventLog]) -> None:
    tasks, events = stores
    first, second = events.append([("t1", FLY, {"n": 1}), ("t1", FLY, {"n": 2})])
    slept: list[float] = []
    chunks = followed(tasks, events, "t1", first.seq, max_seconds=20, sleep=slept.append, clock_ns=settled)
    assert chunks == [f'id: {second.seq}\nevent: fly\ndata: {{"n":2}}\n\n', "retry: 500\n\n"]
    assert slept == []  # answered without waiting out the 20 s


def test_a_bounded_follow_without_news_ends_after_its_time(stores: tuple[TaskStore, EventLog]) -> None:
    tasks, events = stores
    (event,) = events.append([("t1", FLY, {"n": 1})])
    chunks = followed(tasks, events, "t1", event.seq, max_seconds=0, sleep=lambda _: None)
    assert chunks == ["retry: 500\n\n"]


def test_an_event_stamped_earlier_but_written_later_by_another_writer_still_reaches_the_watcher(
    stores: tuple[TaskStore, EventLog],
) -> None:
    """Two writers (an actor's sidecar, the stream consumer) append to one task's log: the earlier stamp
    can land after the later one has been read, and a cursor past it would skip it for good."""
    tasks, sidecar = stores
    stream = EventLog(sidecar.table, client=sidecar.client)
    (start,) = sidecar.append([("t1", FLY, {"n": 0})])
    late_seq = sidecar.next_seq()  # the sidecar stamps its event ...
    (early,) = stream.append([("t1", FLY, {"n": 2})])  # ... the stream consumer's later one lands first
    now = time.time_ns()
    sidecar.next_seq = lambda: late_seq  # type: ignore[method-assign]
    sidecar.append([("t1", FLY, {"n": 1})])  # ... and only now does the sidecar's write land
    assert sidecar.after("t1", start.seq, now_ns=now) == []  # nothing has settled yet: nothing is handed out
    chunks = followed(tasks, sidecar, "t1", start.seq, max_seconds=20, sleep=lambda _: None, clock_ns=settled)
    assert chunks == [
        f'id: {late_seq}\nevent: fly\ndata: {{"n":1}}\n\n',
        f'id: {early.seq}\nevent: fly\ndata: {{"n":2}}\n\n',
        "retry: 500\n\n",
    ]


def test_a_bounded_answer_stays_far_under_api_gateways_10_mb(stores: tuple[TaskStore, EventLog]) -> None:
    tasks, events = stores
    (start,) = events.append([("t1", FLY, {"n": 0})])
    big = "x" * 300_000  # a FLY event near DynamoDB's 400 KB item limit
    appended = events.append([("t1", FLY, {"n": n, "text": big}) for n in range(1, 6)])
    first = followed(tasks, events, "t1", start.seq, max_seconds=20, sleep=lambda _: None, clock_ns=settled)
    assert sum(len(chunk) for chunk in first) <= RESPONSE_BUDGET_BYTES
    assert first[-1] == "retry: 500\n\n"
    sent = [chunk.split("\n", 1)[0].removeprefix("id: ") for chunk in first[:-1]]
    assert sent == [event.seq for event in appended[: len(sent)]]
    rest = followed(tasks, events, "t1", sent[-1], max_seconds=20, sleep=lambda _: None, clock_ns=settled)
    assert rest[0].startswith(f"id: {appended[len(sent)].seq}\n")  # the next answer continues where it stopped


def test_a_bounded_follow_answers_before_api_gateways_integration_timeout() -> None:
    """API Gateway answers 504 after 29 s whatever the function does: the follow window plus one poll
    and the status read must end well before that."""
    assert LAMBDA_FOLLOW_SECONDS + POLL_SECONDS + 5 < INTEGRATION_TIMEOUT_SECONDS


def test_a_cursor_ahead_of_what_has_settled_reads_nothing_without_asking_dynamodb() -> None:
    """A client's Last-Event-ID from a clock ahead of this reader's: DynamoDB refuses a BETWEEN whose
    lower bound is past its upper one (a 500 for the watcher); moto does not, so no query may be made."""

    class RefusingDynamoDB:
        def query(self, **_request: object) -> object:
            raise AssertionError("DynamoDB answers ValidationException to reversed BETWEEN bounds")

    log = EventLog(EVENTS, client=RefusingDynamoDB())  # type: ignore[arg-type]
    assert log.after("t-1", f"{2 * 10**18:020d}-abcdef", now_ns=10**18) == []


def test_the_settle_window_covers_the_longest_a_write_can_take() -> None:
    """A watcher waits `SETTLE_SECONDS` for an event to land: the event log's client must not retry on
    its own (botocore would wait up to 20 s between attempts) and must give up on a call in time."""
    from asya.live import CONNECT_SECONDS, READ_SECONDS, WRITE_BACKOFF

    log = EventLog("events")
    config: Any = log.client.meta.config
    assert config.retries["total_max_attempts"] == 1
    assert (config.connect_timeout, config.read_timeout) == (CONNECT_SECONDS, READ_SECONDS)
    longest = WRITE_BACKOFF.attempts * (CONNECT_SECONDS + READ_SECONDS) + WRITE_BACKOFF.budget
    assert longest < SETTLE_SECONDS
    assert log.backoff is WRITE_BACKOFF


class _Sleeps:
    """A sleep that moves the follower's clock instead of waiting, and fails a follow that would poll
    past `limit` seconds of it (the old wait for a stopped task's status: a 15 s keepalive of quiet)."""

    def __init__(self, limit: float) -> None:
        self.now_ns = time.time_ns()
        self.limit_ns = self.now_ns + int(limit * 1e9)

    def sleep(self, seconds: float) -> None:
        self.now_ns += int(seconds * 1e9)
        assert self.now_ns < self.limit_ns, "the follow waited past its limit"

    def clock_ns(self) -> int:
        return self.now_ns


def test_a_task_that_ended_unwatched_ends_its_follower_at_once(stores: tuple[TaskStore, EventLog]) -> None:
    """No watcher when it ended: no stopping event in the log, and a follower that comes later with a
    cursor gets the record's status as soon as its stop is older than the settle window and the lag."""
    tasks, events = stores
    tasks.finish("t1", "t1", "succeeded", {"output": '{"n": 2}'})
    clock = _Sleeps(limit=1.0)
    clock.now_ns += int(ENDED_SECONDS * 1e9)  # the follower comes well after the task ended
    clock.limit_ns += int(ENDED_SECONDS * 1e9)
    chunks = followed(tasks, events, "t1", "0", sleep=clock.sleep, clock_ns=clock.clock_ns)
    assert len(chunks) == 1
    assert chunks[0].startswith("id: 0\nevent: status\n")
    assert '"status":"succeeded"' in chunks[0]


def test_a_task_that_just_ended_is_followed_to_its_last_events_then_its_status(
    stores: tuple[TaskStore, EventLog],
) -> None:
    tasks, events = stores
    (token,) = events.append([("t1", FLY, {"token": "last"})])
    tasks.finish("t1", "t1", "succeeded", {"output": '{"n": 2}'})
    clock = _Sleeps(limit=ENDED_SECONDS + SETTLE_SECONDS + 1)  # the record is read once a settle window
    chunks = followed(tasks, events, "t1", "0", sleep=clock.sleep, clock_ns=clock.clock_ns)
    assert chunks[0] == f'id: {token.seq}\nevent: fly\ndata: {{"token":"last"}}\n\n', "the event came first"
    assert chunks[1].startswith(f"id: {token.seq}\nevent: status\n")
    assert '"status":"succeeded"' in chunks[1]


class _Feed:
    """A FLY channel with `events` waiting on it (`asya_gateway.fly_feed.Feed`)."""

    def __init__(self, *events: Any) -> None:
        self.events = list(events)
        self.closed = False
        self.waited = 0

    def take(self) -> list[Any]:
        taken, self.events = self.events, []
        return taken

    def wait(self, seconds: float) -> None:
        self.waited += 1
        time.sleep(min(seconds, 0.05))

    def close(self) -> None:
        self.closed = True


def test_fly_events_from_the_channel_reach_the_follower_at_once_without_a_cursor(
    stores: tuple[TaskStore, EventLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FLY's fast lane: an event on the task's channel is handed on at the next look, not after the log's
    settle window, and carries no `id:` (a reconnect goes on from the log's cursor); a bounded answer
    that has one ends soon after, so a poller gets it within about a second; the channel is let go."""
    monkeypatch.setattr(sse, "FLY_GATHER_SECONDS", 0.0)
    tasks, events = stores
    fly = {"id": "t1", "actor": "a", "data": {"token": "hi"}}
    feed = _Feed(fly)
    chunks = followed(tasks, events, "t1", "0", max_seconds=20, sleep=lambda _: None, feeds=lambda _id: feed)
    assert chunks == ['event: fly\ndata: {"id":"t1","actor":"a","data":{"token":"hi"}}\n\n', "retry: 500\n\n"]
    assert feed.closed


def test_a_follow_waits_on_the_channel_between_polls_of_the_log(stores: tuple[TaskStore, EventLog]) -> None:
    """Between two reads of the log a follow waits on the channel, which wakes it when a FLY event comes."""
    tasks, events = stores

    def no_sleep(_seconds: float) -> None:
        raise AssertionError("with a channel, the follow waits on it")

    feed = _Feed()
    chunks = followed(tasks, events, "t1", "0", max_seconds=0.2, sleep=no_sleep, feeds=lambda _id: feed)
    assert chunks == ["retry: 500\n\n"]
    assert feed.waited >= 2
    assert feed.closed


def test_a_follow_of_a_task_that_ended_lets_its_channel_go(stores: tuple[TaskStore, EventLog]) -> None:
    tasks, events = stores
    tasks.finish("t1", "t1", "succeeded", {"output": '{"n": 2}'})
    clock = _Sleeps(limit=1.0)
    clock.now_ns += int(ENDED_SECONDS * 1e9)
    feed = _Feed()
    chunks = followed(tasks, events, "t1", "0", clock_ns=clock.clock_ns, feeds=lambda _id: feed)
    assert '"status":"succeeded"' in chunks[-1]
    assert feed.closed


def test_an_unknown_task_lets_its_channel_go(stores: tuple[TaskStore, EventLog]) -> None:
    tasks, events = stores
    feed = _Feed()
    assert follow(tasks, events, "nobody", None, feeds=lambda _id: feed) is None
    assert feed.closed
