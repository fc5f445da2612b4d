"""The mesh as an A2A agent (docs/a2a.md): A2A's JSON-RPC methods at `POST /a2a` (its card is
`asya_gateway.a2a_card`'s, the task's A2A objects `asya_gateway.a2a_objects`', what a request may be
`asya_gateway.a2a_requests`').

- The methods (`A2aEndpoint`), in both versions the official SDK's clients speak: A2A 1.0
  (`SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`; the
  SDK's default, ProtoJSON shapes) and A2A 0.3 (`message/send`, `message/stream`, `tasks/get`,
  `tasks/list`, `tasks/cancel`, `tasks/resubscribe`; the SDK's `a2a.compat.v0_3`), and the
  authenticated extended card (`GetExtendedAgentCard`, 0.3's `agent/getAuthenticatedExtendedCard`):
  the whole card, skills and input schemas, for a caller with the mesh's credentials. One mapping makes
  A2A objects of a task's view, in 1.0's shapes (`a2a_task`, `status_update`, ...); the 0.3 answers
  are those objects rewritten (`Answers03`), as the SDK's own compatibility layer does.
- A message runs one flow (the skill named in its metadata, `metadata.skill`; a mesh of one flow needs
  none) on its data part; a message naming a task waiting for input (`paused`, A2A's `input-required`)
  resumes it with its data part as the person's input.

Every task goes through `TaskService` (`create`, `wait`, `cancel`, `resume`, `listing.page`), so what
the REST API lets a caller see and do, A2A does too. The server is written without the SDK: its models
are pydantic's and plain dicts, because the SDK brings protobuf, google-api-core and httpx, which the
gateway function's bundle would carry for nothing; the SDK's clients are what the tests drive it with.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from asya.envelope import rfc3339
from asya.live import CURSOR_PATTERN
from asya.task_record import TERMINAL, TaskStatus
from asya.variables import WAIT_MAX_SECONDS
from asya_gateway.a2a_card import SKILL
from asya_gateway.a2a_objects import (
    EXTENDED_CARD_NOT_CONFIGURED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LISTED,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    V03,
    V1,
    Answers,
    Answers03,
    Urls,
    a2a_task,
    artifact_update,
    context_id,
    fly_update,
    output_artifact,
    status_update,
)
from asya_gateway.a2a_requests import (
    STREAMING,
    A2aError,
    ListParams,
    Message,
    Operation,
    SendParams,
    TaskIdParams,
    check_version,
    method_of,
    parsed_params,
    parsed_request,
    payload_of,
    whole_numbers,
)
from asya_gateway.a2a_stream import STOP_AT, JsonRpcRendering, stream
from asya_gateway.fly_feed import EarlyFeed
from asya_gateway.listing import TaskFilter, moment
from asya_gateway.service import TaskService
from asya_gateway.task_error import TaskError

_CURSOR = re.compile(CURSOR_PATTERN)  # an event's id (SSE `id:`), as `Last-Event-ID` gives it back
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,251}$")  # the service's rule, with room for the prefix


def _but(document: dict[str, Any], *left_out: str) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key not in left_out}


# -- the endpoint ---------------------------------------------------------------------------------

Answer = dict[str, Any] | Iterator[str]


class A2aEndpoint:
    """One JSON-RPC request to `POST /a2a`. `urls(task_id)`: the task's REST URLs, for a task's metadata;
    `wait_left(seconds)`: how long a `message/send` may still wait for its task; `follow_seconds()`: how
    long a stream may run (None: until the task stops, where the server streams as it goes); `card()`:
    the extended card (`asya_gateway.a2a_card.extended_card`), which every request here may read: it
    came through the mesh's credentials, as no `/.well-known/` read does."""

    def __init__(
        self,
        service: TaskService,
        urls: Urls,
        *,
        wait_left: Callable[[float], float] = lambda seconds: seconds,
        follow_seconds: Callable[[], float | None] = lambda: None,
        card: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.service = service
        self.urls = urls
        self.wait_left = wait_left
        self.follow_seconds = follow_seconds
        self.card = card

    def handle(
        self, body: bytes | str | None, headers: Mapping[str, str], *, streams_only: bool = False
    ) -> Answer | None:
        """The answer: a JSON-RPC response (errors included: they are answers too, with HTTP 200), or,
        for a streaming method, its SSE chunks. `headers` by lower-case name. With `streams_only` (the
        local server, which streams), None for a request that is not a streaming one: the function
        answers it."""
        request_id: str | int | None = None
        wire = Answers()
        streaming = False
        try:
            request_id, method, params = parsed_request(body)
            version, operation = method_of(method)
            wire = Answers03() if version == V03 else Answers()
            streaming = operation in STREAMING
            if streams_only and not streaming:
                return None
            check_version(headers.get("a2a-version"))
            if streaming:
                return self._stream(operation, wire, request_id, params, headers.get("last-event-id"))
            return {"jsonrpc": "2.0", "id": request_id, "result": self._answer(operation, wire, params)}
        except A2aError as exc:
            if streams_only and not streaming:
                return None  # the function answers it, as it answers every request that is not a stream
            return error(getattr(exc, "request_id", request_id), exc.code, str(exc), wire)
        except TaskError as exc:
            return error(request_id, *_refused(exc), wire)

    def _answer(self, operation: Operation, wire: Answers, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "card":  # one card both versions read, as the public one
            if self.card is None:
                raise A2aError(EXTENDED_CARD_NOT_CONFIGURED, "this endpoint has no extended card")
            return self.card()
        if operation == "send":
            return wire.sent(a2a_task(self._send(parsed_params(SendParams, params), wire), self.urls))
        if operation == "get":
            task_id = parsed_params(TaskIdParams, params).id
            return wire.task(a2a_task(self._found(task_id), self.urls))
        if operation == "cancel":
            return wire.task(a2a_task(self._cancel(parsed_params(TaskIdParams, params).id), self.urls))
        return self._list(wire, parsed_params(ListParams, params))

    def _send(self, sent: SendParams, wire: Answers) -> dict[str, Any]:
        """A new task of the skill's flow, or the paused task the message names resumed; then the task
        once it ended or waits for input again, or as it stands when the wait runs out."""
        task_id = self._start(sent, wire)
        if sent.immediate:
            return self._found(task_id)
        return self.service.wait(task_id, self.wait_left(WAIT_MAX_SECONDS), paused=True)[1]

    def _start(self, sent: SendParams, wire: Answers, named: Callable[[str], None] | None = None) -> str:
        """The task the message starts (or resumes); `named` is told its id before it is sent on."""
        message = sent.message
        given = payload_of(message)
        if wire.version == V1:  # ProtoJSON carries every number as a double: 2 arrives as 2.0
            given = whole_numbers(given)
        if message.task_id is not None:
            if not isinstance(given, dict):
                raise A2aError(INVALID_PARAMS, "the input to a task waiting for it is a JSON object (its data part)")
            if named is not None:
                named(message.task_id)
            self.service.resume(message.task_id, given)  # one not waiting for input: a 409, -32004
            return message.task_id
        flow = self._skill(message, sent.metadata)
        key = f"a2a:{message.message_id}" if _IDEMPOTENCY_KEY.match(message.message_id) else None
        return self.service.create(payload=given, flow=flow, idempotency_key=key, named=named).task_id

    def _skill(self, message: Message, metadata: dict[str, Any] | None) -> str:
        flows = self.service.settings.flows
        named = (message.metadata or {}).get(SKILL, (metadata or {}).get(SKILL))
        if named is None and len(flows) == 1:
            return next(iter(flows))
        known = ", ".join(sorted(flows)) or "none"
        if named is None:
            raise A2aError(INVALID_PARAMS, f"name the skill (flow) to run in the message's metadata.{SKILL}: {known}")
        if not isinstance(named, str) or named not in flows:
            raise A2aError(INVALID_PARAMS, f"metadata.{SKILL}: no skill {str(named)[:80]!r} (skills: {known})")
        return named

    def _found(self, task_id: str) -> dict[str, Any]:
        """The task as it stands, with its output if it succeeded."""
        return self.service.wait(task_id, 0)[1]

    def _cancel(self, task_id: str) -> dict[str, Any]:
        view = self.service.cancel(task_id)
        if view["status"] in TERMINAL and view["status"] != TaskStatus.CANCELED:
            raise A2aError(TASK_NOT_CANCELABLE, f"task {task_id!r} has already ended ({view['status']})")
        return view

    def _list(self, wire: Answers, asked: ListParams) -> dict[str, Any]:
        """A page of tasks, newest first (the REST listing's, `TaskListing`); `contextId` and
        `statusTimestampAfter` keep those of the page that match, so a page may be short."""
        status = None
        if asked.status is not None and asked.status not in ("", "TASK_STATE_UNSPECIFIED"):
            status = LISTED.get(asked.status)
            if status is None:
                return wire.listed([], "", asked.page_size or 50)  # a state no task of the mesh is in
        after = asked.status_timestamp_after
        after = rfc3339(moment("statusTimestampAfter", after)) if after else None
        size = asked.page_size or 50
        page = self.service.listing.page(status, size, asked.page_token or None, TaskFilter())
        views = [
            view
            for view in page["tasks"]
            if (asked.context_id is None or context_id(view) == asked.context_id)
            and (after is None or str(view.get("updated_at", "")) >= after)
        ]
        tasks = [a2a_task(view, self.urls) for view in views]
        if not asked.include_artifacts:
            tasks = [_but(task, "artifacts") for task in tasks]
        return wire.listed(tasks, page["next_cursor"] or "", size)

    def _stream(
        self,
        operation: Operation,
        wire: Answers,
        request_id: str | int,
        params: dict[str, Any],
        last_event_id: str | None,
    ) -> Answer:
        feeds = self.service.feeds
        if operation == "stream":  # its FLY channel subscribed before the task is sent on: none missed
            early = EarlyFeed(feeds)
            with early.closed_on_error():
                task_id, cursor = self._start(parsed_params(SendParams, params), wire, early.subscribe), None
            feeds = early.feeds
        else:
            task_id = parsed_params(TaskIdParams, params).id
            self._found(task_id)  # known, and the caller's to see
            cursor = last_event_id if last_event_id and _CURSOR.fullmatch(last_event_id) else None  # goes on after it
        rendering = JsonRpcRendering(request_id, _Updates(self, wire, task_id))
        chunks = stream(self.service, task_id, cursor, rendering, self.follow_seconds(), feeds=feeds)
        if chunks is None:
            raise A2aError(TASK_NOT_FOUND, f"no task {task_id!r}")
        return chunks


class _Updates:
    """A stream's answers, in the request's version (`a2a_stream.Updates`)."""

    def __init__(self, endpoint: A2aEndpoint, wire: Answers, task_id: str) -> None:
        self.endpoint = endpoint
        self.wire = wire
        self.task_id = task_id
        self.context = task_id

    def task(self, view: dict[str, Any]) -> dict[str, Any]:
        self.context = context_id(view)
        return self.wire.streamed_task(a2a_task(self._ended(view), self.endpoint.urls))

    def changed(self, view: dict[str, Any]) -> list[dict[str, Any]]:
        view = self._ended(view)
        answers = []
        artifact = output_artifact(view)
        if artifact is not None:
            answers.append(self.wire.artifact_update(artifact_update(view, artifact)))
        update = status_update(view, self.endpoint.urls)
        return [*answers, self.wire.status_update(update, final=view["status"] in STOP_AT)]

    def fly(self, data: dict[str, Any]) -> dict[str, Any]:
        return self.wire.status_update(fly_update(self.task_id, self.context, data), final=False)

    def _ended(self, view: dict[str, Any]) -> dict[str, Any]:
        """A task that succeeded, with its output (read from S3 when x-sink kept it there)."""
        if view.get("status") != TaskStatus.SUCCEEDED or "output" in view or "output_url" in view:
            return view
        try:
            return {**view, **self.endpoint.service.wait(view["id"], 0)[1]}
        except TaskError:
            return view


def _refused(exc: TaskError) -> tuple[int, str]:
    """A refusal of the task service as A2A's error."""
    if exc.status == 404:
        return TASK_NOT_FOUND, str(exc)
    if exc.status == 409:
        return UNSUPPORTED_OPERATION, str(exc)
    if exc.status >= 500:
        return INTERNAL_ERROR, str(exc)
    return INVALID_PARAMS, str(exc)


def error(request_id: str | int | None, code: int, message: str, wire: Answers | None = None) -> dict[str, Any]:
    """A JSON-RPC error answer (1.0's with its `ErrorInfo` detail)."""
    told: dict[str, Any] = {"code": code, "message": message}
    data = (wire or Answers()).error_data(code)
    if data is not None:
        told["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": told}
