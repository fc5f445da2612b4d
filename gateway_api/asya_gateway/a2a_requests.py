"""What a JSON-RPC request to the mesh's A2A endpoint (`POST /a2a`, `asya_gateway.a2a`) may be: its envelope
(id, method, params), the methods of both versions served (A2A 1.0's and 0.3's) and the operation each
is, the `A2A-Version` header, each method's params as pydantic models, and the message's input (its data
part). What is wrong with a request is an `A2aError` naming JSON-RPC's or A2A's code; the endpoint
answers it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from asya_gateway.a2a_objects import (
    CONTENT_TYPE_NOT_SUPPORTED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PUSH_NOTIFICATION_NOT_SUPPORTED,
    V03,
    V1,
    VERSION_NOT_SUPPORTED,
)

MAX_TASK_ID = 256
MAX_SAFE_INTEGER = 2**53  # a double holds every integer up to it

Operation = Literal["send", "stream", "get", "list", "cancel", "resubscribe", "card"]
METHODS: dict[str, tuple[str, Operation]] = {
    "SendMessage": (V1, "send"),
    "SendStreamingMessage": (V1, "stream"),
    "GetTask": (V1, "get"),
    "ListTasks": (V1, "list"),
    "CancelTask": (V1, "cancel"),
    "SubscribeToTask": (V1, "resubscribe"),
    "GetExtendedAgentCard": (V1, "card"),
    "message/send": (V03, "send"),
    "message/stream": (V03, "stream"),
    "tasks/get": (V03, "get"),
    "tasks/list": (V03, "list"),
    "tasks/cancel": (V03, "cancel"),
    "tasks/resubscribe": (V03, "resubscribe"),
    "agent/getAuthenticatedExtendedCard": (V03, "card"),
}
STREAMING = ("stream", "resubscribe")
PUSH_METHODS = (
    *("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"),
    *("ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"),
    *("tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get"),
    *("tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"),
)
_VERSION = re.compile(r"^(\d+)\.(\d+)(\.\d+)?$")


class A2aError(Exception):
    """A JSON-RPC error: `code` is JSON-RPC's or A2A's."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Params(BaseModel):
    """A method's params, in either version's (camelCase) names; what A2A adds that this agent does not
    use is ignored, as A2A asks of a receiver."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


TaskIdText = Annotated[str, Field(min_length=1, max_length=MAX_TASK_ID)]


class TaskIdParams(_Params):
    id: TaskIdText


class Part(_Params):
    kind: str | None = Field(default=None, max_length=20)
    text: str | None = None
    data: Any = None
    metadata: dict[str, Any] | None = None


class Message(_Params):
    message_id: str = Field(min_length=1, max_length=256)
    task_id: TaskIdText | None = None
    context_id: str | None = Field(default=None, max_length=256)
    parts: list[Part] = Field(min_length=1, max_length=100)
    metadata: dict[str, Any] | None = None


class SendConfiguration(_Params):
    return_immediately: bool = False  # 1.0
    blocking: bool | None = None  # 0.3: false answers at once


class SendParams(_Params):
    message: Message
    configuration: SendConfiguration | None = None
    metadata: dict[str, Any] | None = None

    @property
    def immediate(self) -> bool:
        given = self.configuration
        return given is not None and (given.return_immediately or given.blocking is False)


class ListParams(_Params):
    context_id: str | None = Field(default=None, max_length=256)
    status: str | None = Field(default=None, max_length=40)
    page_size: int | None = Field(default=None, ge=1, le=100)
    page_token: str | None = Field(default=None, max_length=4096)
    status_timestamp_after: str | None = Field(default=None, max_length=40)
    include_artifacts: bool = False


def parsed_params(model: type[_Params], params: dict[str, Any]) -> Any:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "params"
        raise A2aError(INVALID_PARAMS, f"params.{where}: {first['msg']}") from None


def parsed_request(body: bytes | str | None) -> tuple[str | int, str, dict[str, Any]]:
    """The request's id, method and params, or the JSON-RPC error that says what is wrong with it."""
    try:
        document = orjson.loads(body or b"")
    except orjson.JSONDecodeError as exc:
        raise A2aError(PARSE_ERROR, f"the body is not JSON: {str(exc)[:200]}") from None
    if isinstance(document, list):
        raise A2aError(INVALID_REQUEST, "batches are not supported: send one request at a time")
    if not isinstance(document, dict):
        raise A2aError(INVALID_REQUEST, "a JSON-RPC request is a JSON object")
    request_id = document.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        raise A2aError(INVALID_REQUEST, "id: an A2A request has an id, a string or an integer")
    if document.get("jsonrpc") != "2.0":
        raise _InvalidRequestError(request_id, "jsonrpc: must be exactly '2.0'")
    method = document.get("method")
    if not isinstance(method, str) or not method:
        raise _InvalidRequestError(request_id, "method: a JSON-RPC request names its method")
    params = document.get("params", {})
    if not isinstance(params, dict):
        raise _InvalidRequestError(request_id, "params: an object", INVALID_PARAMS)
    return request_id, method, params


class _InvalidRequestError(A2aError):
    """A request whose id is known, refused: the id is answered."""

    def __init__(self, request_id: str | int, message: str, code: int = INVALID_REQUEST) -> None:
        super().__init__(code, message)
        self.request_id = request_id


def method_of(method: str) -> tuple[str, Operation]:
    found = METHODS.get(method)
    if found is not None:
        return found
    if method in PUSH_METHODS:
        raise A2aError(PUSH_NOTIFICATION_NOT_SUPPORTED, "push notifications are not supported: stream, or poll")
    raise A2aError(METHOD_NOT_FOUND, f"method {method[:80]!r} is not supported")


def check_version(header: str | None) -> None:
    """`A2A-Version`: absent, or one of the versions served (its patch is not told apart)."""
    if not header:
        return
    found = _VERSION.match(header.strip())
    if found is None or f"{found.group(1)}.{found.group(2)}" not in (V1, V03):
        raise A2aError(VERSION_NOT_SUPPORTED, f"A2A-Version {header[:20]!r}: this agent speaks {V1} and {V03}")


def payload_of(message: Message) -> Any:
    """The message's data part: the flow's input (or a person's). A text part holding JSON is taken as
    one, for a client that has only text."""
    data = [part for part in message.parts if "data" in part.model_fields_set]
    if len(data) > 1:
        raise A2aError(INVALID_PARAMS, "message.parts: one data part, the input")
    if data:
        value = data[0].data
        compat = (data[0].metadata or {}).get("data_part_compat") is True  # 0.3's wrapped value
        return value["value"] if compat and isinstance(value, dict) and "value" in value else value
    texts = [part.text for part in message.parts if part.text is not None]
    if len(texts) == 1:
        try:
            return orjson.loads(texts[0])
        except orjson.JSONDecodeError:
            pass
    raise A2aError(
        CONTENT_TYPE_NOT_SUPPORTED,
        f"message.parts: no data part; this agent takes {JSON} (a data part, or a text part holding JSON)",
    )


def whole_numbers(value: Any) -> Any:
    """`value` with each whole number as an integer, as a JSON client would have written it: an actor
    given 2.0 where it counts (`range(n)`) would fail."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value
