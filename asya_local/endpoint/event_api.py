"""AppSync Events on the local endpoint: FLY's fast lane (`asya.fly_channel`, `asya_gateway.fly_feed`)
works locally as on AWS, through the same two doors.

- HTTP publish: `POST /appsync/<api id>/event` on the endpoint's own port (the API's "HTTP domain" is
  `127.0.0.1:<port>/appsync/<api id>`, `asya_local.event_apis`), body `{"channel", "events"}`.
- Real-time: a WebSocket server of its own, on a port of its own, at `/appsync/<api id>/event/realtime`,
  speaking AppSync Events' protocol (the `aws-appsync-event-ws` subprotocol with the connect's signed
  headers in a `header-` one; `connection_init`/`connection_ack`, `subscribe`/`subscribe_success` or
  `subscribe_error`, `data`, `unsubscribe`), a publish reaching every subscriber of its channel.

What AWS enforces is enforced here (unless `ASYA_LOCAL_IAM=off`): each request is SigV4-signed for
`appsync` by a key the endpoint issued (`asya_local.functions.iam_auth.verify`), and the signer's
policies allow `appsync:EventPublish` / `appsync:EventSubscribe` on the channel's namespace and
`appsync:EventConnect` on the API (`asya_local.endpoint.moto_iam.decide`, AWS's evaluation). Then
AppSync's own rules: a channel is `/<namespace>/...`, at most five segments of letters, digits and
dashes (50 at most each), no wildcard in a publish; the namespace exists (the mesh's one: `asya`); one
to five events a publish, each a JSON text of at most 240 KB. The namespace's `onSubscribe` handler of
the mesh (`asya_cdk.fly_api`) refuses a wildcard subscription: here too, as an unauthorized subscribe.

What is not modelled: API keys, Cognito and Lambda authorizers (the mesh's API is IAM only), other
namespaces and their handlers, and publishing over the WebSocket.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asya.fly_channel import MAX_EVENT_BYTES, MAX_EVENTS, NAMESPACE
from asya_local.functions.iam_auth import SignatureRefusedError, Signer, verify
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.functions.rest_proxy import HttpRequest

PREFIX = "/appsync/"
SUBPROTOCOL = "aws-appsync-event-ws"
CONNECTION_TIMEOUT_MS = 300_000
_PUBLISH_PATH = re.compile(r"^/appsync/([a-z0-9]{1,64})/event$")
_REALTIME_PATH = re.compile(r"^/appsync/([a-z0-9]{1,64})/event/realtime$")
_SEGMENT = re.compile(r"^[A-Za-z0-9-]{1,50}$")
MAX_SEGMENTS = 5
UNAUTHORIZED = "You are not authorized to make this call."
_log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
# (action, resource ARN, the signer's access key, its session token) -> allowed
Permits = Callable[[str, str, str, str | None], bool]


class ApiError(Exception):
    """A request AppSync refuses: its HTTP status, error type and message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind

    def errors(self) -> list[dict[str, str]]:
        return [{"errorType": self.kind, "message": str(self)}]


def api_arn(api_id: str) -> str:
    return f"arn:aws:appsync:{REGION}:{ACCOUNT}:apis/{api_id}"


def namespace_arn(api_id: str, namespace: str) -> str:
    return f"{api_arn(api_id)}/channelNamespace/{namespace}"


def channel_namespace(channel: Any, *, subscribing: bool) -> str:
    """The namespace of a channel path AppSync takes, or `ApiError`."""
    if not isinstance(channel, str) or not channel.startswith("/"):
        raise ApiError(400, "BadRequestException", "channel: a path starting with '/'")
    segments = channel.strip("/").split("/")
    if len(segments) > MAX_SEGMENTS:
        raise ApiError(400, "BadRequestException", f"channel: at most {MAX_SEGMENTS} segments")
    for position, segment in enumerate(segments):
        if segment == "*" and subscribing and position == len(segments) - 1 and position > 0:
            continue  # AppSync's wildcard: the mesh's onSubscribe handler refuses it (below)
        if not _SEGMENT.match(segment):
            raise ApiError(400, "BadRequestException", f"channel segment {segment!r}: letters, digits, '-', 1 to 50")
    if segments[0] != NAMESPACE:
        raise ApiError(404, "NotFoundException", f"channel namespace {segments[0]!r} does not exist")
    return segments[0]


def checked_events(events: Any) -> list[str]:
    """A publish's events as AppSync takes them, or `ApiError`."""
    if not isinstance(events, list) or not 1 <= len(events) <= MAX_EVENTS:
        raise ApiError(400, "BadRequestException", f"events: a list of 1 to {MAX_EVENTS} events")
    for event in events:
        if not isinstance(event, str):
            raise ApiError(400, "BadRequestException", "events: each event is a JSON value as text")
        if len(event.encode()) > MAX_EVENT_BYTES:
            raise ApiError(400, "BadRequestException", f"event over {MAX_EVENT_BYTES} bytes")
        try:
            json.loads(event)
        except ValueError:
            raise ApiError(400, "BadRequestException", "events: each event is a JSON value as text") from None
    return events


class EventApis:
    """Every local Event API's channels (an API is its id: one per deployed mesh) and their subscribers."""

    def __init__(self, signers: Callable[[str, str | None], Signer | None], permits: Permits | None) -> None:
        self.signers = signers
        self.permits = permits  # None: IAM is off (`ASYA_LOCAL_IAM=off`)
        self._subscribers: dict[tuple[str, str], dict[str, Any]] = {}  # (api, channel) -> {sub id: connection}
        self._lock = threading.Lock()

    # -- authorization --------------------------------------------------------------------------------

    def authorize(self, headers: Mapping[str, str], path: str, body: bytes, action: str, resource: str) -> None:
        """`ApiError` (401) unless the headers sign a POST of `body` to `path` and the signer may."""
        if self.permits is None:
            return
        request = HttpRequest("POST", path, list(headers.items()), body)
        try:
            identity = verify(request, self.signers, REGION, service="appsync")
        except (SignatureRefusedError, KeyError) as exc:
            raise ApiError(401, "UnauthorizedException", str(exc) or UNAUTHORIZED) from None
        if not self.permits(action, resource, identity.access_key, request.header("x-amz-security-token")):
            raise ApiError(401, "UnauthorizedException", UNAUTHORIZED)

    # -- HTTP publish ---------------------------------------------------------------------------------

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith(PREFIX)

    def publish_app(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """The WSGI answer to a request under `/appsync/`: a publish, or AppSync's refusal."""
        path = str(environ.get("PATH_INFO", ""))
        try:
            found = _PUBLISH_PATH.match(path)
            if found is None or environ.get("REQUEST_METHOD") != "POST":
                raise ApiError(404, "NotFoundException", "POST /appsync/<api id>/event publishes")
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            answer = self.publish(found.group(1), _wsgi_headers(environ), path, body)
        except ApiError as error:
            return _answer(start_response, error.status, {"errors": error.errors()})
        return _answer(start_response, 200, answer)

    def publish(self, api_id: str, headers: Mapping[str, str], path: str, body: bytes) -> dict[str, Any]:
        try:
            document = json.loads(body or b"{}")
        except ValueError:
            raise ApiError(400, "BadRequestException", "the body is not JSON") from None
        if not isinstance(document, dict):
            raise ApiError(400, "BadRequestException", 'the body is {"channel", "events"}')
        channel = document.get("channel")
        namespace = channel_namespace(channel, subscribing=False)
        self.authorize(headers, path, body, "appsync:EventPublish", namespace_arn(api_id, namespace))
        events = checked_events(document.get("events"))
        with self._lock:
            listeners = list(self._subscribers.get((api_id, str(channel)), {}).items())
        for subscription, connection in listeners:
            for event in events:
                try:
                    connection.send(json.dumps({"type": "data", "id": subscription, "event": event}))
                except Exception:  # noqa: BLE001 - a subscriber gone away: it is dropped when its loop ends
                    break
        return {"failed": [], "successful": [{"identifier": str(uuid.uuid4()), "index": i} for i in range(len(events))]}

    # -- real-time ------------------------------------------------------------------------------------

    def connection(self, websocket: Any) -> None:
        """One WebSocket connection, from its connect to its close."""
        found = _REALTIME_PATH.match(websocket.request.path.split("?")[0])
        if found is None:
            websocket.close(4404, "not an Event API's real-time endpoint")
            return
        api_id = found.group(1)
        http_path = f"/appsync/{api_id}/event"
        try:
            connect = _connect_headers(websocket.request.headers.get("Sec-WebSocket-Protocol", ""))
            self.authorize(connect, http_path, b"{}", "appsync:EventConnect", api_arn(api_id))
        except ApiError as error:
            websocket.send(json.dumps({"type": "connection_error", "errors": error.errors()}))
            websocket.close(4401, "unauthorized")
            return
        subscriptions: dict[str, str] = {}  # id -> channel
        try:
            for raw in websocket:
                self._message(websocket, api_id, http_path, json.loads(raw), subscriptions)
        except Exception as exc:  # noqa: BLE001 - the connection ended, however it ended
            _log.debug("event api connection ended: %s", exc)
        finally:
            with self._lock:
                for subscription, channel in subscriptions.items():
                    self._subscribers.get((api_id, channel), {}).pop(subscription, None)

    def _message(
        self, websocket: Any, api_id: str, http_path: str, message: dict[str, Any], subscriptions: dict[str, str]
    ) -> None:
        kind = message.get("type")
        if kind == "connection_init":
            websocket.send(json.dumps({"type": "connection_ack", "connectionTimeoutMs": CONNECTION_TIMEOUT_MS}))
            websocket.send(json.dumps({"type": "ka"}))
        elif kind == "subscribe":
            subscription = str(message.get("id"))
            try:
                channel = message.get("channel")
                namespace = channel_namespace(channel, subscribing=True)
                body = json.dumps({"channel": channel}, separators=(",", ":")).encode()
                authorization = message.get("authorization")
                headers = authorization if isinstance(authorization, dict) else {}
                self.authorize(headers, http_path, body, "appsync:EventSubscribe", namespace_arn(api_id, namespace))
                if "*" in str(channel):  # the mesh's onSubscribe handler: one task's channel, never a wildcard
                    raise ApiError(401, "UnauthorizedException", UNAUTHORIZED)
            except ApiError as error:
                websocket.send(json.dumps({"type": "subscribe_error", "id": subscription, "errors": error.errors()}))
                return
            with self._lock:
                self._subscribers.setdefault((api_id, str(channel)), {})[subscription] = websocket
            subscriptions[subscription] = str(channel)
            websocket.send(json.dumps({"type": "subscribe_success", "id": subscription}))
        elif kind == "unsubscribe":
            subscription = str(message.get("id"))
            channel = subscriptions.pop(subscription, None)
            with self._lock:
                self._subscribers.get((api_id, str(channel)), {}).pop(subscription, None)
            websocket.send(json.dumps({"type": "unsubscribe_success", "id": subscription}))
        else:
            unsupported = ApiError(400, "UnsupportedOperation", f"{kind!r}: not supported by the local Event API")
            websocket.send(json.dumps({"type": "error", "id": message.get("id"), "errors": unsupported.errors()}))


def _connect_headers(offered: str) -> dict[str, str]:
    """The signed headers a connect carries in its `header-<base64url JSON>` subprotocol."""
    for protocol in (part.strip() for part in offered.split(",")):
        if protocol.startswith("header-"):
            encoded = protocol.removeprefix("header-")
            try:
                headers = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
            except ValueError:
                break
            if isinstance(headers, dict):
                return {str(key): str(value) for key, value in headers.items()}
    raise ApiError(401, "UnauthorizedException", UNAUTHORIZED)


def _wsgi_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    headers = {
        key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = str(environ["CONTENT_TYPE"])
    return headers


def _answer(start_response: StartResponse, status: int, body: Any) -> Iterable[bytes]:
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}.get(status, "Error")
    start_response(f"{status} {reason}", [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]


def serve_realtime(apis: EventApis) -> tuple[int, Callable[[], None]]:
    """Start the real-time WebSocket server on a free loopback port, in a thread; (its port, its stop)."""
    from websockets.sync.server import serve

    server = serve(apis.connection, "127.0.0.1", 0, subprotocols=[SUBPROTOCOL])  # type: ignore[list-item]
    threading.Thread(target=server.serve_forever, name="event-api-realtime", daemon=True).start()
    return int(server.socket.getsockname()[1]), server.shutdown


def moto_permits() -> Permits:
    """Whether the local endpoint's IAM allows an action, for the holder of an access key: its policies
    as moto collects them, decided as AWS decides (`asya_local.endpoint.moto_iam`)."""
    from moto.iam.access_control import create_access_key

    from asya_local.endpoint.moto_iam import Request, decide, policy_document

    def permits(action: str, resource: str, access_key: str, token: str | None) -> bool:
        headers = {"X-Amz-Security-Token": token} if token else {}
        key = create_access_key(ACCOUNT, "aws", access_key, headers)
        documents = [policy_document(policy) for policy in key.collect_policies()]
        return decide(documents, Request(action, (resource,), {}))

    return permits
