"""A follow's subscription to its task's FLY channel (FLY's fast lane, `asya.fly_channel`): the gateway
connects to the mesh's AppSync Events API over WebSocket for as long as the follow lasts, and the
follow hands each event on as it arrives, instead of reading FLY from the live log seconds later.

The protocol is AppSync Events' real-time one: the connection offers the subprotocols
`aws-appsync-event-ws` and `header-<the connect's signed headers, base64url>`; then `connection_init`
(answered `connection_ack`), one `subscribe` naming the channel with its own signed `authorization`
(answered `subscribe_success` or `subscribe_error`); then `data` messages, each carrying one event as
JSON text, and `ka` keep-alives. Signatures are SigV4 for the service `appsync`, made with the
function's role (`appsync:EventConnect` on the API, `appsync:EventSubscribe` on the namespace).

A subscription that cannot be made is logged and the follow goes on without FLY events: they are
ephemeral (docs/actors.md), and status never depends on them.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from asya.fly_channel import (
    ChannelPublisher,
    channel_of,
    events_url,
    function_region,
    session_credentials,
    signed_headers,
)

if TYPE_CHECKING:
    from asya_gateway.settings import GatewaySettings

SUBPROTOCOL = "aws-appsync-event-ws"
SUBSCRIBE_SECONDS = 3.0  # connect, acknowledge and subscribe within this, or follow without FLY
_log = logging.getLogger(__name__)


class Feed(Protocol):
    """What a follow reads FLY events from."""

    def take(self) -> list[Any]:
        """The events that arrived since the last take, oldest first."""

    def wait(self, seconds: float) -> None:
        """Return once an event is waiting, or after `seconds`."""

    def close(self) -> None: ...


class ChannelFeed:
    """One task's channel, subscribed on a connection of its own; a thread reads what arrives."""

    def __init__(self, connection: Any, subscription: str) -> None:
        self.connection = connection
        self.subscription = subscription
        self._arrived: list[Any] = []
        self._news = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="fly-feed", daemon=True)
        self._reader.start()

    def take(self) -> list[Any]:
        with self._news:
            taken, self._arrived = self._arrived, []
        return taken

    def wait(self, seconds: float) -> None:
        with self._news:
            self._news.wait_for(lambda: bool(self._arrived), seconds)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing what may already be closed
            self.connection.close()

    def _read(self) -> None:
        try:
            for raw in self.connection:
                message = orjson.loads(raw)
                if message.get("type") == "data" and message.get("id") == self.subscription:
                    with self._news:
                        self._arrived.append(orjson.loads(message["event"]))
                        self._news.notify_all()
        except Exception as exc:  # noqa: BLE001 - the connection ended: the follow goes on without FLY
            _log.debug("fly feed ended: %s", exc)


class FlyFeeds:
    """Subscriptions to the mesh's Event API (`http_domain`, `realtime_domain`), one per follow."""

    def __init__(
        self,
        http_domain: str,
        realtime_domain: str,
        region: str,
        credentials: Callable[[], Any] = session_credentials,
        connect: Callable[..., Any] | None = None,
    ) -> None:
        self.publish_url = events_url(http_domain, "/event")
        self.realtime_url = events_url(realtime_domain, "/event/realtime", secure="wss", plain="ws")
        self.region = region
        self.credentials = credentials
        self._connect = connect

    def open(self, task_id: str) -> ChannelFeed | None:
        """The task's channel, subscribed; None (logged) if the API refused or did not answer in time."""
        try:
            return self._subscribed(channel_of(task_id))
        except Exception as exc:  # noqa: BLE001 - FLY is best effort: follow without it
            _log.warning("following without FLY events: subscribing failed: %s: %s", type(exc).__name__, exc)
            return None

    def _subscribed(self, channel: str) -> ChannelFeed:
        credentials = self.credentials()
        connect_headers = signed_headers(self.publish_url, b"{}", credentials, self.region)
        header = base64.urlsafe_b64encode(orjson.dumps(connect_headers)).decode().rstrip("=")
        connection = self._connector()(
            self.realtime_url, subprotocols=[SUBPROTOCOL, f"header-{header}"], open_timeout=SUBSCRIBE_SECONDS
        )
        try:
            connection.send(orjson.dumps({"type": "connection_init"}).decode())
            _expect(connection, "connection_ack")
            subscription = str(uuid.uuid4())
            body = orjson.dumps({"channel": channel})
            authorization = signed_headers(self.publish_url, body, credentials, self.region)
            subscribe = {"type": "subscribe", "id": subscription, "channel": channel, "authorization": authorization}
            connection.send(orjson.dumps(subscribe).decode())
            _expect(connection, "subscribe_success")
        except Exception:
            connection.close()
            raise
        return ChannelFeed(connection, subscription)

    def _connector(self) -> Callable[..., Any]:
        if self._connect is None:
            from websockets.sync.client import connect

            self._connect = connect
        return self._connect


def _expect(connection: Any, wanted: str) -> dict[str, Any]:
    """The next message that is not a keep-alive, which must be `wanted` (an error says why not)."""
    while True:
        message: dict[str, Any] = orjson.loads(connection.recv(timeout=SUBSCRIBE_SECONDS))
        kind = message.get("type")
        if kind == "ka":
            continue
        if kind != wanted:
            raise ConnectionError(f"{kind}: {message.get('errors') or message}")
        return message


class EarlyFeed:
    """A follow's channel subscribed as soon as its task has an id, before the task is sent on (an A2A
    `message/stream`: `TaskService.create`'s `named`), so not even its first FLY events are missed."""

    def __init__(self, feeds: Callable[[str], Feed | None] | None) -> None:
        self.opener = feeds
        self.feed: Feed | None = None

    def subscribe(self, task_id: str) -> None:
        self.feed = self.opener(task_id) if self.opener is not None else None

    def feeds(self, _task_id: str) -> Feed | None:
        """What the follow subscribes with: the channel already subscribed."""
        return self.feed

    @contextlib.contextmanager
    def closed_on_error(self) -> Iterator[None]:
        """The subscription let go if starting the task fails."""
        try:
            yield
        except Exception:
            if self.feed is not None:
                self.feed.close()
            raise


def fly_feeds(settings: GatewaySettings) -> Callable[[str], Feed | None] | None:
    """How the gateway's follows subscribe to FLY channels: None when the mesh logs FLY events instead."""
    if not (settings.fly_domain and settings.fly_realtime_domain):
        return None
    return FlyFeeds(settings.fly_domain, settings.fly_realtime_domain, function_region()).open


def fly_publisher(settings: GatewaySettings) -> ChannelPublisher | None:
    """How the gateway publishes the FLY events actors outside the mesh post (`asya_gateway.reported`):
    None when the mesh logs FLY events instead."""
    if not settings.fly_domain:
        return None
    return ChannelPublisher(settings.fly_domain, function_region(), _unsent)


def _unsent(what: str, error: Exception) -> None:
    """The gateway publishes with `send`, whose caller hears each failure; nothing goes through here."""
    _log.warning("%s failed: %s", what, error)
