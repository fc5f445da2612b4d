"""FLY's fast lane (docs/status.md, "FLY events"): each FLY event is published on its task's channel of
the mesh's AppSync Events API as soon as the handler yields it, and whoever follows the task (the
gateway's SSE and A2A streams) is subscribed to that channel, so an event reaches a follower within
a second instead of after the live log's settle window and a DynamoDB write each.

A background sender does the publishing, so a handler that yields token after token is never held
up by HTTP: what arrives within `GATHER_SECONDS` of the first event goes out together, up to
`MAX_EVENTS` per request (AppSync's limit), one request per channel. A publish that fails is logged
and counted and its events are let go: FLY is ephemeral (docs/actors.md), never status. The sidecar
waits for the sender (`flush`) before an invocation returns, as Lambda freezes a function's threads
between invocations; that wait is bounded (`FLUSH_SECONDS`: two requests' timeouts), and what is
still unsent then is a logged failure.

A connection kept open across a freeze is not trusted: Lambda's network drops a flow idle for a few
minutes without a word to either end, so a publish on it would wait out its read timeout and lose its
events (the first tokens of the next invocation's stream). One idle longer than `IDLE_SECONDS` is
closed before the next publish, which then pays a new TLS handshake instead.

The request is AppSync Events' HTTP publish (`POST https://<http domain>/event`, body
`{"channel", "events": [<JSON text>, ...]}`), signed with SigV4 for the service `appsync` by
botocore's signer: no SDK of its own, and urllib3 (botocore's) keeps the connection open between
publishes. The local stack serves the same API on loopback, over plain HTTP (`events_url`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import urllib3
    from botocore.credentials import Credentials

NAMESPACE = "asya"  # the channel namespace of the mesh's Event API (`asya_cdk.fly_api`)
MAX_EVENTS = 5  # AppSync Events: events in one publish
MAX_EVENT_BYTES = 240 * 1024  # AppSync Events: one event
GATHER_SECONDS = 0.02  # what arrives this soon after an event goes out with it
CONNECT_SECONDS = 0.5
READ_SECONDS = 1.0
FLUSH_SECONDS = 2 * (CONNECT_SECONDS + READ_SECONDS)  # the longest an invocation waits for its events to go
IDLE_SECONDS = 60.0  # a connection idle longer (a frozen function's, most often) is made again
# AppSync's channel segments: letters, digits and dashes, at most 50 of them
_SEGMENT = re.compile(r"^[A-Za-z0-9-]{1,50}$")
_DIGESTED = "h-"  # a channel segment made from a task id's digest
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def channel_of(task_id: str) -> str:
    """The channel of a task's FLY events: `/asya/<task id>`, or, for an id AppSync would refuse as a
    segment (a task id may hold any character, and up to 256 of them), `h-` and a digest of it; an id
    that itself starts with `h-` is digested too, so that no task's id names another's channel. One API
    serves one mesh, so the mesh's namespace needs no segment of its own."""
    plain = _SEGMENT.match(task_id) and not task_id.startswith(_DIGESTED)
    segment = task_id if plain else _DIGESTED + hashlib.sha256(task_id.encode()).hexdigest()[:40]
    return f"/{NAMESPACE}/{segment}"


def function_region() -> str:
    """The region the function runs in, whose API it signs for (Lambda sets `AWS_REGION`)."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def events_url(domain: str, path: str, *, secure: str = "https", plain: str = "http") -> str:
    """The URL of an Event API endpoint at `domain` (its HTTP or real-time domain, as the stack names
    it): TLS on AWS; plain on loopback, where the local stack serves it."""
    scheme = plain if domain.startswith(_LOOPBACK) else secure
    return f"{scheme}://{domain}{path}"


def session_credentials() -> Credentials:
    """The function's own credentials (its role's, on Lambda), current: what it signs with."""
    return _credentials_source().get_frozen_credentials()  # type: ignore[return-value]


@functools.cache
def _credentials_source() -> Credentials:
    """Found once per process (a botocore session resolves its provider chain when made); refreshed by
    botocore when they are a role's that expire."""
    import botocore.session

    found = botocore.session.get_session().get_credentials()
    if found is None:
        raise RuntimeError("no AWS credentials to sign with")
    return found


@dataclass(slots=True)
class _Pending:
    """Events waiting for the sender, and how many it has taken and not yet sent."""

    waiting: queue.SimpleQueue[tuple[str, str]] = field(default_factory=queue.SimpleQueue)
    unsent: int = 0
    done: threading.Condition = field(default_factory=threading.Condition)


class ChannelPublisher:
    """Publishes FLY events on their tasks' channels from a thread of its own (started on first use)."""

    def __init__(
        self,
        domain: str,
        region: str,
        failed: Callable[[str, Exception], None],
        *,
        credentials: Callable[[], Credentials] = session_credentials,
        http: urllib3.PoolManager | None = None,
    ) -> None:
        self.url = events_url(domain, "/event")
        self.region = region
        self.failed = failed
        self.credentials = credentials
        self._http = http
        self._pending = _Pending()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()
        self._used: float | None = None  # when the pool last sent (`time.monotonic`: it runs on in a freeze)

    def publish(self, channel: str, event: Any) -> None:
        """Hand the event to the sender; one over AppSync's size is refused here (logged, let go)."""
        try:
            text = event_text(event)
        except EventTooLargeError as exc:
            self.failed("fly event", exc)
            return
        with self._pending.done:
            self._pending.unsent += 1
        self._pending.waiting.put((channel, text))
        self._start()

    def send(self, channel: str, event: Any) -> None:
        """Publish one event now, in the caller's thread (the gateway, for an actor outside the mesh,
        which hears whether it went): `EventTooLargeError`, or what the API answered if it refused."""
        self._post(channel, [event_text(event)])

    def flush(self, timeout: float = FLUSH_SECONDS) -> bool:
        """Wait until every event handed over has been sent (or let go); False if `timeout` passed first."""
        with self._pending.done:
            return self._pending.done.wait_for(lambda: self._pending.unsent == 0, timeout)

    def _start(self) -> None:
        with self._starting:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fly-publisher", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            gathered = [self._pending.waiting.get()]
            until = time.monotonic() + GATHER_SECONDS
            while (left := until - time.monotonic()) > 0:
                try:
                    gathered.append(self._pending.waiting.get(timeout=left))
                except queue.Empty:
                    break
            for channel, texts in batches(gathered):
                try:
                    self._post(channel, texts)
                except Exception as exc:  # noqa: BLE001 - FLY is best effort: logged, counted, let go
                    self.failed("fly publish", exc)
            with self._pending.done:
                self._pending.unsent -= len(gathered)
                self._pending.done.notify_all()

    def _post(self, channel: str, texts: list[str]) -> None:
        body = orjson.dumps({"channel": channel, "events": texts})
        headers = signed_headers(self.url, body, self.credentials(), self.region)
        answer = self._fresh_pool().request("POST", self.url, body=body, headers=headers)
        if answer.status != 200:
            raise PublishRefusedError(f"{answer.status}: {answer.data[:300].decode(errors='replace')}")
        failed = orjson.loads(answer.data or b"{}").get("failed") or []
        if failed:
            raise PublishRefusedError(f"{len(failed)} of {len(texts)} events refused: {failed[:2]}")

    def _fresh_pool(self) -> urllib3.PoolManager:
        """The pool, its connection closed first if it sat idle past `IDLE_SECONDS`."""
        now = time.monotonic()
        if self._http is None:
            import urllib3

            timeout = urllib3.Timeout(connect=CONNECT_SECONDS, read=READ_SECONDS)
            self._http = urllib3.PoolManager(maxsize=1, timeout=timeout, retries=False)
        elif self._used is not None and now - self._used > IDLE_SECONDS:
            self._http.clear()
        self._used = now
        return self._http


class PublishRefusedError(Exception):
    """The Event API did not take (all of) a publish."""


class EventTooLargeError(ValueError):
    """An event over AppSync's 240 KB."""


def event_text(event: Any) -> str:
    """The event as a publish carries it (JSON text), or `EventTooLargeError`."""
    text = orjson.dumps(event).decode()
    size = len(text.encode())
    if size > MAX_EVENT_BYTES:
        raise EventTooLargeError(f"{size} bytes; AppSync takes {MAX_EVENT_BYTES}")
    return text


def batches(gathered: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """The gathered events as publishes: per channel, in the order they came, `MAX_EVENTS` at most."""
    by_channel: dict[str, list[str]] = {}
    for channel, text in gathered:
        by_channel.setdefault(channel, []).append(text)
    return [
        (channel, texts[start : start + MAX_EVENTS])
        for channel, texts in by_channel.items()
        for start in range(0, len(texts), MAX_EVENTS)
    ]


def signed_headers(url: str, body: bytes, credentials: Any, region: str) -> dict[str, str]:
    """The headers of a POST of `body` to `url`, SigV4-signed for AppSync: what the HTTP publish sends,
    and what a WebSocket's connect and subscribe carry as their `authorization`."""
    from urllib.parse import urlsplit

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    headers = {
        "accept": "application/json, text/javascript",
        "content-type": "application/json; charset=UTF-8",
        "host": urlsplit(url).netloc,
    }
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    SigV4Auth(credentials, "appsync", region).add_auth(request)
    return dict(request.headers.items())
