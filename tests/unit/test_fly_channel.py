"""FLY's fast lane, the sidecar's side (`asya.fly_channel`): each FLY event is published on its task's
AppSync Events channel by a background sender, gathered at most five to a signed request, never
written to the live log; a refused publish is logged and let go."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from botocore.credentials import Credentials

from asya.config import SidecarConfig
from asya.envelope import parse_envelope
from asya.fly_channel import FLUSH_SECONDS, MAX_EVENT_BYTES, ChannelPublisher, batches, channel_of, events_url
from asya.headers import ROOT_HEADER
from asya.reporting import StatusReporter, status_reporter
from asya.sidecar import Sidecar
from asya.telemetry import Telemetry
from asya.transport import MemoryTransport
from asya_gateway.reported import apply_event
from asya_gateway.task_error import TaskError
from tests.support.mesh import envelope

KEY = Credentials("AKIDEXAMPLE", "secret", "token")


class _Answer:
    def __init__(self, status: int, data: bytes) -> None:
        self.status = status
        self.data = data


class FakeHttp:
    """What urllib3 is asked to send; answers 200 with every event taken, or `status` with `refusal`."""

    def __init__(self, status: int = 200, refusal: bytes = b"") -> None:
        self.sent: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.status = status
        self.refusal = refusal
        self.hold = threading.Event()
        self.hold.set()
        self.connections = 1  # how many connections it has opened: `clear` closes the one it keeps

    def clear(self) -> None:
        self.connections += 1

    def request(self, method: str, url: str, *, body: bytes, headers: dict[str, str]) -> _Answer:
        assert method == "POST"
        self.hold.wait(5)
        document = json.loads(body)
        self.sent.append((url, document, headers))
        if self.status != 200:
            return _Answer(self.status, self.refusal)
        return _Answer(200, json.dumps({"failed": [], "successful": document["events"]}).encode())


def publisher(http: FakeHttp, failures: list[str] | None = None) -> ChannelPublisher:
    failed = failures if failures is not None else []
    return ChannelPublisher(
        "abc.appsync-api.us-east-1.amazonaws.com",
        "us-east-1",
        lambda what, error: failed.append(f"{what}: {error}"),
        credentials=lambda: KEY,
        http=http,  # type: ignore[arg-type]
    )


def test_a_task_id_is_its_channels_segment_and_one_appsync_refuses_becomes_a_digest() -> None:
    task = "0c6f4a8e-2d1b-4c3a-9f1e-5b7d8a9c0e1f"
    assert channel_of(task) == f"/asya/{task}"
    odd = channel_of("tenant:42/job.7 " + "x" * 300)
    segment = odd.removeprefix("/asya/")
    assert len(segment) <= 50
    assert segment.replace("-", "").isalnum()
    assert channel_of("tenant:42/job.7 " + "x" * 300) == odd, "the same id, the same channel"
    assert channel_of(segment) != odd, "an id shaped like a digest does not name that task's channel"


def test_the_local_stacks_api_is_reached_over_plain_http_and_aws_over_tls() -> None:
    assert events_url("abc.appsync-api.eu-west-1.amazonaws.com", "/event") == (
        "https://abc.appsync-api.eu-west-1.amazonaws.com/event"
    )
    assert events_url("127.0.0.1:4566/appsync/abc", "/event/realtime", secure="wss", plain="ws") == (
        "ws://127.0.0.1:4566/appsync/abc/event/realtime"
    )


def test_events_gathered_together_go_five_to_a_publish_per_channel_in_their_order() -> None:
    gathered = [("/asya/a", f"{n}") for n in range(12)] + [("/asya/b", "x")]
    assert [(channel, len(texts)) for channel, texts in batches(gathered)] == [
        ("/asya/a", 5),
        ("/asya/a", 5),
        ("/asya/a", 2),
        ("/asya/b", 1),
    ]
    assert [text for _, texts in batches(gathered)[:3] for text in texts] == [f"{n}" for n in range(12)]


def test_a_burst_of_events_is_sent_in_few_signed_publishes_without_holding_the_handler() -> None:
    http = FakeHttp()
    http.hold.clear()  # the sender is stuck on its first request
    sender = publisher(http)
    started = time.monotonic()
    for n in range(12):
        sender.publish("/asya/t1", {"n": n})
    assert time.monotonic() - started < 0.1, "publishing hands the event to the sender and returns"
    http.hold.set()
    assert sender.flush(5)
    sent = [event["n"] for _, document, _ in http.sent for event in map(json.loads, document["events"])]
    assert sent == list(range(12))
    assert all(len(document["events"]) <= 5 for _, document, _ in http.sent)
    assert len(http.sent) <= 4, "gathered, not one request per event"
    url, document, headers = http.sent[0]
    assert url == "https://abc.appsync-api.us-east-1.amazonaws.com/event"
    assert document["channel"] == "/asya/t1"
    assert "/us-east-1/appsync/aws4_request" in headers["Authorization"]
    assert headers["host"] == "abc.appsync-api.us-east-1.amazonaws.com"
    assert headers["X-Amz-Security-Token"] == "token"


def test_a_refused_publish_is_logged_and_its_events_let_go_and_the_sender_goes_on() -> None:
    failures: list[str] = []
    http = FakeHttp(status=401, refusal=b'{"errors":[{"errorType":"UnauthorizedException"}]}')
    sender = publisher(http, failures)
    sender.publish("/asya/t1", {"n": 1})
    assert sender.flush(5)
    assert len(failures) == 1
    assert "401" in failures[0]
    assert "UnauthorizedException" in failures[0]
    http.status = 200
    sender.publish("/asya/t1", {"n": 2})
    assert sender.flush(5)
    assert len(http.sent) == 2


def test_a_connection_idle_across_a_freeze_is_made_again_before_the_next_publish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lambda's network drops a flow idle for minutes silently: publishing on it would time out and
    lose the next invocation's first events."""
    clock = [1000.0]
    monkeypatch.setattr("asya.fly_channel.time.monotonic", lambda: clock[0])
    http = FakeHttp()
    sender = publisher(http)
    sender.send("/asya/t1", {"n": 1})
    clock[0] += 30
    sender.send("/asya/t1", {"n": 2})
    assert http.connections == 1  # a busy connection is kept
    clock[0] += 400  # the function sat frozen between invocations
    sender.send("/asya/t1", {"n": 3})
    assert http.connections == 2
    assert len(http.sent) == 3


def test_an_event_over_appsyncs_size_is_refused_before_it_is_sent() -> None:
    failures: list[str] = []
    http = FakeHttp()
    sender = publisher(http, failures)
    sender.publish("/asya/t1", {"blob": "x" * MAX_EVENT_BYTES})
    assert sender.flush(1)
    assert http.sent == []
    assert len(failures) == 1
    assert f"AppSync takes {MAX_EVENT_BYTES}" in failures[0]


def test_a_flush_that_outlasts_its_bound_says_so() -> None:
    http = FakeHttp()
    http.hold.clear()
    sender = publisher(http)
    sender.publish("/asya/t1", {"n": 1})
    assert not sender.flush(0.05)
    http.hold.set()
    assert sender.flush(5)


class Recorded(ChannelPublisher):
    def __init__(self) -> None:
        self.published: list[tuple[str, Any]] = []

    def publish(self, channel: str, event: Any) -> None:
        self.published.append((channel, event))

    def flush(self, timeout: float = 0.0) -> bool:
        return True


class NoLog:
    def append(self, events: Any) -> None:
        raise AssertionError("with the fast lane, a FLY event is not written to the live log")


def test_a_branchs_fly_event_goes_on_its_own_channel_and_its_roots_and_not_to_the_log() -> None:
    fly = Recorded()
    reporter = StatusReporter(None, NoLog(), Telemetry("unit", "verbs"), fly=fly)  # type: ignore[arg-type]
    branch = parse_envelope(json.dumps(envelope(id="b-1", headers={ROOT_HEADER: "r-1"})))
    reporter.send_fly(branch, {"token": "hi"})
    data = {"id": "b-1", "actor": branch.route.curr, "data": {"token": "hi"}}
    assert fly.published == [("/asya/b-1", data), ("/asya/r-1", data)]


def test_an_actor_of_a_mesh_with_the_fast_lane_publishes_and_a_late_sender_is_logged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The function's reporter publishes when its function is told the Event API's domain; FLY events
    still unsent when the invocation returns are a logged failure (`StatusErrors`), not a held hop."""
    logged: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(Telemetry, "log_failure", lambda _, message, **fields: logged.append((message, fields)))
    variables = {"ASYA_NAMESPACE": "unit", "ASYA_ACTOR_NAME": "verbs", "ASYA_HANDLER": "actors.verbs"}
    tables = {"ASYA_TASKS_TABLE": "tasks", "ASYA_EVENTS_TABLE": "events"}
    telemetry = Telemetry("unit", "verbs")
    plain = status_reporter(SidecarConfig.from_env({**variables, **tables}), telemetry)
    assert plain.fly is None, "without the domain, FLY events go to the live log"
    config = SidecarConfig.from_env(
        {**variables, **tables, "ASYA_FLY_DOMAIN": "abc.appsync-api.eu-west-1.amazonaws.com"}
    )
    reporter = status_reporter(config, telemetry)
    assert reporter.fly is not None
    assert reporter.fly.url == "https://abc.appsync-api.eu-west-1.amazonaws.com/event"
    monkeypatch.setattr(reporter.fly, "flush", lambda _timeout=0.0: False)
    reporter.flush_fly()
    assert [message for message, _ in logged] == ["fly publish failed"]
    assert logged[0][1]["error_type"] == "TimeoutError"


def test_a_fly_event_posted_from_outside_the_mesh_is_published_on_the_tasks_channel() -> None:
    """`POST /mesh/{id}/events` with `{"type": "fly"}`: on the fast lane the gateway publishes it at
    once, and the poster hears a 503 if the API did not take it, a 413 if AppSync never would."""
    http = FakeHttp()
    posted = {"type": "fly", "actor": "outside", "data": {"token": "hi"}}
    assert apply_event(None, NoLog(), {"id": "t-1"}, posted, publisher(http))  # type: ignore[arg-type]
    [(_, document, _)] = http.sent
    assert document["channel"] == "/asya/t-1"
    assert [json.loads(text) for text in document["events"]] == [
        {"id": "t-1", "actor": "outside", "data": {"token": "hi"}}
    ]
    with pytest.raises(TaskError) as refused:
        apply_event(None, NoLog(), {"id": "t-1"}, posted, publisher(FakeHttp(status=401)))  # type: ignore[arg-type]
    assert refused.value.status == 503
    large = {"type": "fly", "data": {"blob": "x" * (MAX_EVENT_BYTES + 1)}}
    with pytest.raises(TaskError) as too_large:
        apply_event(None, NoLog(), {"id": "t-1"}, large, publisher(FakeHttp()))  # type: ignore[arg-type]
    assert too_large.value.status == 413


class _Context:
    """What a Lambda invocation tells the handler of its time."""

    def __init__(self, millis: int) -> None:
        self.millis = millis
        self.function_name, self.memory_limit_in_mb = "asya-unit-verbs", 512
        self.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:asya-unit-verbs"
        self.aws_request_id = "r-1"

    def get_remaining_time_in_millis(self) -> int:
        return self.millis


def test_an_invocation_waits_for_its_fly_events_no_longer_than_it_has_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait past the function's timeout would fail the whole batch (its sends done, its answer lost):
    near its end the invocation lets its unsent FLY events go instead, as it does after 3 s."""
    variables = {"ASYA_NAMESPACE": "unit", "ASYA_ACTOR_NAME": "verbs", "ASYA_HANDLER": "tests.support.handlers.echo"}
    tables = {"ASYA_TASKS_TABLE": "tasks", "ASYA_EVENTS_TABLE": "events", "ASYA_FLY_DOMAIN": "abc.example.com"}
    sidecar = Sidecar(SidecarConfig.from_env({**variables, **tables}), MemoryTransport())
    waited: list[float] = []
    assert sidecar.reporter.fly is not None

    def flush(timeout: float) -> bool:
        waited.append(timeout)
        return True

    monkeypatch.setattr(sidecar.reporter.fly, "flush", flush)
    sidecar.handle({"Records": []}, _Context(1000))
    sidecar.handle({"Records": []}, _Context(600_000))
    assert waited == [pytest.approx(0.8), FLUSH_SECONDS]
