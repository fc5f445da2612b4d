"""The gateway's HTTP API (docs/status.md): Powertools' REST resolver, with request validation and the
OpenAPI document generated from these routes (`GET /api/v1/openapi.json`).

    POST   /api/v1/mesh                     create a task (flow or route, payload, headers, timeout);
                                            ?wait=<seconds>: answer with its result if it ends in time
    GET    /api/v1/mesh                     list tasks, newest first (?status=, ?flow=, ?actor=, ?since=,
                                            ?until=, ?roots=, ?limit=, ?cursor=)
    GET    /api/v1/mesh/{id}                one task; ?wait=<seconds>: once it ends, or when the wait runs out
    DELETE /api/v1/mesh/{id}                cancel (idempotent, cascades to fan-out branches)
    GET    /api/v1/mesh/{id}/events         follow it: SSE (`asya_gateway.sse`)
    POST   /api/v1/mesh/{id}/events         status / fly events from actors outside the mesh
    POST   /api/v1/mesh/{id}/resume         resume a paused task with human input
    POST   /api/v1/mesh/{id}/rerun          run an ended task again, with its input or a new one
    GET    /.well-known/agent-card.json     the mesh as an A2A agent: its public card (`asya_gateway.a2a_card`);
    GET    /.well-known/agent.json          the same card at A2A 0.3's path; both readable without credentials
    POST   /a2a                             A2A, JSON-RPC: 1.0's SendMessage, SendStreamingMessage, GetTask,
                                            ListTasks, CancelTask, SubscribeToTask and 0.3's message/send,
                                            message/stream, tasks/get, tasks/list, tasks/cancel, tasks/resubscribe;
                                            the extended card, flows as skills (GetExtendedAgentCard)
    POST   /a2a/tasks/{id}:cancel           cancel, A2A style
    GET    /api/v1/sump                     what x-sump kept (?reason=, ?actor=, ?since=, ?limit=, ?cursor=)
    GET    /api/v1/sump/{id}                one message x-sump kept, as it was kept
    POST   /api/v1/sump/{id}:redrive        put it back in the mesh (`asya_gateway.sump`)
    POST   /mcp                             flows as MCP tools (`asya_gateway.mcp`)
    GET    /health
    GET    /.well-known/oauth-protected-resource[/mcp]   where to sign in (`gateway.auth: jwt`)

Every request but `GET /health` and `GET /.well-known/*` is someone's (`caller()`, `asya_gateway.callers`):
with `gateway.auth: jwt` it carries a bearer token the function verifies before routing, or gets 401.
"""

from __future__ import annotations

import base64
import os
import re
import time
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

import orjson
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from asya import variables
from asya.cors import allowed_origin, answer_headers, preflight_headers
from asya.entry import LambdaEntry
from asya.envelope import rfc3339
from asya.live import CURSOR_PATTERN
from asya.names import ACTOR_NAME
from asya.sump import SumpIndex
from asya.task_record import stealthy
from asya.variables import WAIT_MAX_SECONDS
from asya_gateway.a2a import A2aEndpoint
from asya_gateway.a2a_card import extended_card, public_card
from asya_gateway.callers import OPERATOR, Caller, caller_of
from asya_gateway.issuers import SignInRefusedError
from asya_gateway.listing import TaskFilter, moment
from asya_gateway.mcp import McpEndpoint
from asya_gateway.nesting import MAX_NESTING, too_deep
from asya_gateway.service import UNSET as UNSET_INPUT
from asya_gateway.service import Created, TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.sump import UNSET, Sump
from asya_gateway.task_error import TaskError

API = "/api/v1"
WELL_KNOWN = "/.well-known"
LAMBDA_FOLLOW_SECONDS = 20.0  # under API Gateway's 29 s integration timeout
# API Gateway ends every request this long after it arrived: the REST API's limit, and the HTTP API's
# integration timeout as the stack sets it (asya_cdk.http_api; its own ceiling is 30 s)
INTEGRATION_TIMEOUT_SECONDS = 29.0
DEFAULT_STAGE = "$default"  # an HTTP API's stage (`gateway.api: http`): not part of its URL
ANSWER_SECONDS = 3.0  # kept back from a wait for the answer: a GetItem, an S3 read, the JSON
MAX_TASK_ID = 256
TaskId = Annotated[str, Path(min_length=1, max_length=MAX_TASK_ID, description="The task's (envelope's) id")]
EVENT_CURSOR = re.compile(CURSOR_PATTERN)  # an event's id as the event log hands it out
EventCursor = Annotated[str | None, Query(pattern=CURSOR_PATTERN, max_length=64)]
WaitSeconds = Annotated[
    float | None, Query(gt=0, le=WAIT_MAX_SECONDS, description="Seconds to wait for the task to end")
]

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="a key of the client's for this create: retried with it, the create answers with "
        "the task it made the first time (`replayed`), never a second one",
    ),
]
# orjson parses bodies: a body nested past its 1,024 levels, a number out of a double's range or a lone
# surrogate is invalid JSON (422), where the standard library would raise RecursionError or ValueError
# past the validation and the client would get a 502.
app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=orjson.loads)


class _Model(BaseModel):
    """Request bodies are strict: a boolean is not a number, a number is not a string (docs/status.md)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class TaskFailure(_Model):
    """Why a task outside the mesh failed, in the shape the mesh's own failures have."""

    type: str | None = Field(default=None, max_length=256)
    message: str | None = Field(default=None, max_length=4096)
    ancestors: list[Annotated[str, Field(max_length=256)]] | None = Field(default=None, max_length=50, alias="mro")
    traceback: str | None = Field(default=None, max_length=32_768)


class CreateTask(_Model):
    """Either `flow` (a named route of the mesh) or `route` (actor names), and the payload."""

    flow: str | None = Field(default=None, max_length=128)
    route: list[Annotated[str, Field(max_length=80)]] | None = Field(default=None, max_length=100)
    payload: Any = Field(description="Any JSON value; validated against the flow's input schema")
    headers: dict[str, Any] = Field(default_factory=dict, description="Travel with the envelope on every hop")
    timeout: float | None = Field(default=None, gt=0, le=30 * 86_400, description="Seconds until the deadline")


class StatusEvent(_Model):
    type: Literal["status"]
    status: Literal["running", "succeeded", "failed", "canceled"]
    actor: str | None = Field(default=None, max_length=80)
    phase: str | None = Field(default=None, max_length=40)
    progress: float | None = Field(default=None, ge=0, le=100)
    reason: str | None = Field(default=None, max_length=80)
    error: TaskFailure | None = None
    result: str | None = Field(default=None, max_length=2048)


class FlyEvent(_Model):
    type: Literal["fly"]
    actor: str | None = Field(default=None, max_length=80)
    data: Any


class ResumeTask(_Model):
    input: dict[str, Any] = Field(default_factory=dict, description="Merged into the paused envelope's payload")


class RerunTask(_Model):
    """Without `payload`, the task runs again with the input it was started with."""

    payload: Any = Field(default=None, description="A new input instead (JSON null is an input: give it)")


class RedriveRequest(_Model):
    """All optional: by default the envelope goes back where it failed, with the payload it had there."""

    to: str | None = Field(default=None, max_length=80, description="The actor to send it to instead")
    payload: Any = Field(default=None, description="A new payload (JSON null is no payload: give `{}` or a value)")
    envelope: dict[str, Any] | None = Field(
        default=None, description="The fixed envelope, for a message that never parsed"
    )


class GatewayFunction:
    """What the API function runs: the task service its routes use (each request's caller's view of it,
    `service()`), x-sump's index, and the current request's caller."""

    def __init__(self, tasks: TaskService) -> None:
        self.service = tasks
        table = tasks.settings.sump_table
        self.sump_index = SumpIndex(table, client=tasks.tasks.client) if table else None
        self.caller = Caller(owner=None)  # the current request's (one invocation at a time per environment)

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        origins = self.service.settings.cors_origins
        headers = event.get("headers") or {}
        preflight = preflight_headers(str(event.get("httpMethod")), headers, origins) if origins else None
        if preflight is not None:  # before sign-in: a browser sends no credentials with a preflight
            return {"statusCode": 204, "headers": preflight, "body": "", "isBase64Encoded": False}
        refused = self.sign_in(event) or _not_json(event) or _too_deep(event)
        answer = refused if refused is not None else app.resolve(event, context)
        origin = allowed_origin(headers, origins) if origins else None
        if origin is not None:  # every answer, a refusal too: the page reads why it was refused
            answer["headers"] = {**(answer.get("headers") or {}), **answer_headers(origin)}
        return answer

    def sign_in(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Take the event's caller as the current one; the proxy response refusing it, if it must be
        (`gateway.auth: jwt` without a valid token), before anything is routed."""
        signed = self.caller_of(event)
        if isinstance(signed, Caller):
            self.caller = signed
            return None
        return signed

    def caller_of(self, event: dict[str, Any]) -> Caller | dict[str, Any]:
        """The event's caller, or the proxy response refusing it; keeps nothing, so the local server's
        streams, served side by side in threads, each have their own."""
        try:
            return Caller(owner=None) if _open(event) else caller_of(event, self.service.settings.auth)
        except SignInRefusedError as refusal:
            return _signin_refused(event, refusal)


# The API function's entry point (`asya.entry`): its settings are read at the first event.
lambda_handler: LambdaEntry[GatewayFunction] = LambdaEntry(
    lambda: GatewayFunction(TaskService(GatewaySettings.from_env()))
)


def service() -> TaskService:
    """The task service as the current request's caller sees it: every door that goes through it
    (REST, MCP, A2A) shows and changes the caller's own tasks only, an admin's every task."""
    return lambda_handler.built.service.as_caller(caller())


def caller() -> Caller:
    """Who sent the request being served (`asya_gateway.callers`)."""
    return lambda_handler.built.caller


def sump_or_none() -> Sump | None:
    """x-sump's entries as the current request's caller sees them; None without a sump table."""
    index = lambda_handler.built.sump_index
    return Sump(service(), index) if index is not None else None


def sump() -> Sump:
    found = sump_or_none()
    if found is None:
        raise TaskError(404, "this gateway has no sump table (ASYA_SUMP_TABLE)")
    return found


def base_url() -> str:
    """Where this API is reachable, for the URLs it hands out (`ASYA_PUBLIC_URL` overrides)."""
    return _base_url_of(app.current_event.raw_event)


def _base_url_of(event: dict[str, Any]) -> str:
    return _base_url(event.get("headers") or {}, (event.get("requestContext") or {}).get("stage"))


def _base_url(headers: Mapping[str, str], stage: str | None) -> str:
    configured = variables.PUBLIC_URL.read(os.environ)
    if configured:
        return configured.rstrip("/")
    headers = {str(key).lower(): value for key, value in headers.items()}
    host = headers.get("host", "localhost")
    local = host.startswith(("127.0.0.1", "localhost", "[::1]"))
    scheme = headers.get("x-forwarded-proto", "http" if local else "https")
    # a REST API's stage is in its URL; an HTTP API's `$default` stage is served at the root
    prefix = f"/{stage}" if ".execute-api." in host and stage and stage != DEFAULT_STAGE else ""
    return f"{scheme}://{host}{prefix}"


def task_urls(task_id: str, base: str | None = None) -> dict[str, str]:
    status = f"{base if base is not None else base_url()}{API}/mesh/{task_id}"
    return {"status_url": status, "events_url": f"{status}/events"}


def _error(status: int, message: str) -> Response[Any]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"statusCode": status, "message": message},
    )


@app.exception_handler(TaskError)  # type: ignore[untyped-decorator]  # Powertools leaves it untyped
def _refused(error: TaskError) -> Response[Any]:
    return _error(error.status, str(error))


@app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
def _invalid(error: RequestValidationError) -> Response[Any]:
    """422 naming each field and what is wrong with it (Powertools' own answer gives only the field
    and an error code). Pydantic's messages name the expected type, never the code or the input."""
    detail = [_problem(problem) for problem in error.errors()]
    message = "; ".join(f"{'.'.join(map(str, item['loc']))}: {item['msg']}" for item in detail[:5])
    return Response(
        status_code=422,
        content_type=content_types.APPLICATION_JSON,
        body={"statusCode": 422, "message": message, "detail": detail},
    )


def _problem(problem: dict[str, Any]) -> dict[str, Any]:
    if problem["type"] == "json_invalid":  # Powertools puts the character's position where a field would be
        position = problem["loc"][1] if len(problem["loc"]) > 1 else 0
        why = problem.get("ctx", {}).get("error", "")
        return {"loc": ["body"], "type": "json_invalid", "msg": f"invalid JSON at character {position}: {why}"}
    return {"loc": list(problem["loc"]), "type": problem["type"], "msg": problem["msg"]}


@app.get("/health", summary="Liveness")
def health() -> dict[str, str]:
    return {"status": "ok", "namespace": service().settings.namespace}


@app.get(f"{WELL_KNOWN}/oauth-protected-resource", summary="Where to sign in (RFC 9728)")
def protected_resource() -> dict[str, Any]:
    return _protected_resource("")


@app.get(f"{WELL_KNOWN}/oauth-protected-resource/mcp", summary="Where to sign in, for the MCP endpoint")
def protected_mcp() -> dict[str, Any]:
    return _protected_resource("/mcp")


def _protected_resource(path: str) -> dict[str, Any]:
    """This API as an OAuth protected resource (`gateway.auth: jwt` only): the issuer to sign in with,
    how to send the token, and the scopes a client may ask for (`AuthSettings.requestable_scopes`)."""
    auth = service().settings.auth
    if auth.mode != "jwt":
        raise TaskError(404, "this gateway takes no sign-in (gateway.auth is not jwt)")
    return {
        "resource": f"{base_url()}{path}",
        "authorization_servers": [auth.issuer.url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": auth.requestable_scopes,
    }


@app.get(f"{API}/openapi.json", summary="This API's OpenAPI document", include_in_schema=False)
def openapi() -> Response[str]:
    document = app.get_openapi_json_schema(title="asya status gateway", version="1.0.0")
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document)


@app.post(
    f"{API}/mesh",
    summary="Create a task; with ?wait=, wait for its result",
    responses={
        200: {"description": "Created, and ended within the wait: `task` has its status and `output`"},
        201: {"description": "The task was created"},
        202: {"description": "Created, and still running when the wait ended: follow `events_url`"},
    },
)
def create_task(
    request: Annotated[CreateTask, Body()],
    wait: WaitSeconds = None,
    idempotency_key: IdempotencyKey = None,
) -> tuple[dict[str, Any], int]:
    if (request.flow is None) == (request.route is None):
        raise TaskError(400, "give exactly one of 'flow' or 'route'")
    if wait is not None and stealthy(request.headers):
        raise TaskError(400, "wait: a task with x-asya-mesh-status: off has no status to wait for")
    created = service().create(
        payload=request.payload,
        flow=request.flow,
        route=request.route,
        headers=request.headers,
        timeout=request.timeout,
        idempotency_key=idempotency_key,
    )
    body = _created(created, idempotency_key)
    if wait is None:
        return body, 200 if created.replayed else 201
    ended, body["task"] = service().wait(created.task_id, wait_left(wait))
    return body, 200 if ended else 202


def _created(created: Created, idempotency_key: str | None) -> dict[str, Any]:
    """The answer to a task created (or found again by its idempotency key). The stream consumer
    counts the task (`TasksCreated`, once per batch of records), not a metric line per request here."""
    body: dict[str, Any] = {"id": created.task_id, "tracked": created.tracked, **task_urls(created.task_id)}
    if idempotency_key is not None:
        body["replayed"] = created.replayed
    if created.task is not None:
        body["task"] = created.task
    return body


def wait_left(asked: float) -> float:
    """How long a request may still wait: what it asked, within what API Gateway leaves of its 29 s
    counted from the request's arrival (`requestTimeEpoch`: a cold start, the create and the answer's
    own reading and writing included), less `ANSWER_SECONDS` for the answer."""
    arrived = app.current_event.request_context.request_time_epoch / 1000
    return max(0.0, min(asked, arrived + INTEGRATION_TIMEOUT_SECONDS - ANSWER_SECONDS - time.time()))


@app.get(f"{API}/mesh", summary="List tasks, newest first")
def list_tasks(
    *,
    status: Annotated[str | None, Query(max_length=20, description="A status, or `all` (the default)")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=4096, description="`next_cursor` of the page before")] = None,
    flow: Annotated[str | None, Query(max_length=80, pattern=ACTOR_NAME, description="Only this flow's")] = None,
    actor: Annotated[
        str | None, Query(max_length=80, pattern=ACTOR_NAME, description="Only tasks whose route reached it")
    ] = None,
    since: Annotated[str | None, Query(max_length=40, description="Only tasks started at or after (RFC 3339)")] = None,
    until: Annotated[str | None, Query(max_length=40, description="Only tasks started at or before (RFC 3339)")] = None,
    roots: Annotated[bool, Query(description="Only roots: fan-out branches left out")] = False,
) -> dict[str, Any]:
    started, ended = (
        rfc3339(moment(name, text)) if text else None for name, text in (("since", since), ("until", until))
    )
    where = TaskFilter(since=started, flow=flow, roots=roots, until=ended, actor=actor)  # times as records write them
    return service().listing.page(status, limit, cursor, where)


@app.get(f"{API}/flows", summary="The mesh's flows: route, description, timeout, input schema")
def list_flows() -> dict[str, Any]:
    return service().flows()


@app.get(f"{API}/mesh/<task_id>", summary="Get a task; with ?wait=, once it has ended or the wait ran out")
def get_task(task_id: TaskId, wait: WaitSeconds = None) -> dict[str, Any]:
    if wait is None:
        return service().view(task_id)
    return service().wait(task_id, wait_left(wait))[1]


@app.delete(f"{API}/mesh/<task_id>", summary="Cancel a task and its fan-out branches")
def cancel_task(task_id: TaskId) -> dict[str, Any]:
    return service().cancel(task_id)


@app.post("/a2a/tasks/<task_id>:cancel", summary="Cancel a task (A2A)")
def cancel_task_a2a(task_id: TaskId) -> dict[str, Any]:
    return service().cancel(task_id)


@app.get("/.well-known/agent-card.json", summary="The mesh as an A2A agent: its card (A2A 1.0's path)")
def a2a_agent_card() -> dict[str, Any]:
    return _public_card()


@app.get("/.well-known/agent.json", summary="The mesh as an A2A agent: its card (A2A 0.3's path)")
def a2a_agent_card_v03() -> dict[str, Any]:
    return _public_card()


def _public_card() -> dict[str, Any]:
    """What a caller without credentials reads of the mesh as an agent (`gateway.a2a.public_card`)."""
    card = public_card(service().settings, base_url())
    if card is None:
        raise TaskError(404, "this mesh publishes no agent card (gateway.a2a.public_card: off)")
    return card


@app.post(
    "/a2a",
    summary="A2A (JSON-RPC 2.0): run flows as tasks, follow, list and cancel them (docs/a2a.md)",
    responses={200: {"description": "A JSON-RPC answer (errors too); for a streaming method, Server-Sent Events"}},
)
def a2a() -> Response[Any]:
    """On AWS a stream is bounded: it ends before the integration timeout, and the client resubscribes."""
    base = base_url()
    endpoint = A2aEndpoint(
        service(),
        lambda task_id: task_urls(task_id, base),
        wait_left=wait_left,
        follow_seconds=lambda: wait_left(LAMBDA_FOLLOW_SECONDS),
        card=lambda: extended_card(service().settings, base),
    )
    event = app.current_event
    headers = {str(name).lower(): str(value) for name, value in (event.headers or {}).items()}
    answer = endpoint.handle(_raw_body(event.raw_event), headers)
    if isinstance(answer, dict) or answer is None:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=answer or {})
    return Response(
        status_code=200, content_type="text/event-stream", body="".join(answer), headers={"Cache-Control": "no-cache"}
    )


def _raw_body(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body)
        except ValueError:
            return b"\x00"  # not JSON: a parse error
    return str(body).encode("utf-8", "surrogatepass")


def open_a2a_stream(
    body: bytes, headers: Mapping[str, str], caller: Caller = OPERATOR
) -> Iterator[str] | dict[str, Any] | None:
    """For the local server, which streams: a streaming A2A request's SSE chunks as they come (a
    JSON-RPC error answer if it is refused); None for any other request, which the function answers.
    The task's URLs are made from the request's headers, as the function makes them (no stage); its
    tasks are `caller`'s (`sign_in`)."""
    if too_deep(body):
        return None  # the function refuses it (`_too_deep`)
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    base = _base_url(lowered, None)
    endpoint = A2aEndpoint(lambda_handler.built.service.as_caller(caller), lambda task_id: task_urls(task_id, base))
    return endpoint.handle(body, lowered, streams_only=True)


@app.post(f"{API}/mesh/<task_id>/resume", summary="Resume a paused task with human input")
def resume_task(task_id: TaskId, request: Annotated[ResumeTask, Body()]) -> dict[str, Any]:
    return service().resume(task_id, request.input)


@app.post(
    f"{API}/mesh/<task_id>/rerun",
    summary="Run an ended task again: a new task of its flow (or route), with its input or a new one",
    responses={201: {"description": "The new task was created; it names the task it runs again (`rerun_of`)"}},
)
def rerun_task(
    task_id: TaskId,
    request: Annotated[RerunTask | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
) -> tuple[dict[str, Any], int]:
    given = request is not None and "payload" in request.model_fields_set
    payload = request.payload if request is not None and given else UNSET_INPUT
    created = service().rerun(task_id, payload, idempotency_key)
    return {**_created(created, idempotency_key), "task": created.task}, 200 if created.replayed else 201


@app.post(f"{API}/mesh/<task_id>/events", summary="Report a status or fly event from outside the mesh")
def post_event(
    task_id: TaskId, event: Annotated[StatusEvent | FlyEvent, Body(discriminator="type")]
) -> tuple[dict[str, Any], int]:
    applied = service().post_event(task_id, event.model_dump(by_alias=True))
    return {"applied": applied}, 202


@app.get(f"{API}/mesh/<task_id>/events", summary="Follow a task (Server-Sent Events)")
def task_events(
    task_id: TaskId,
    cursor: EventCursor = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", pattern=CURSOR_PATTERN, max_length=64)] = None,
) -> Response[str]:
    chunks = open_event_stream(task_id, last_event_id or cursor, max_seconds=LAMBDA_FOLLOW_SECONDS, caller=caller())
    if chunks is None:
        raise TaskError(404, f"no task {task_id!r}")
    return Response(
        status_code=200,
        content_type="text/event-stream",
        body="".join(chunks),
        headers={"Cache-Control": "no-cache"},
    )


@app.get(f"{API}/sump", summary="What x-sump kept, newest first within a page")
def list_sump(
    reason: Annotated[str | None, Query(max_length=80)] = None,
    actor: Annotated[str | None, Query(max_length=80)] = None,
    since: Annotated[str | None, Query(max_length=40, description="RFC 3339 time: arrivals at or after it")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> dict[str, Any]:
    return sump().list(reason=reason, actor=actor, since=since, limit=limit, cursor=cursor)


@app.get(f"{API}/sump/<envelope_id>", summary="One message x-sump kept: its last arrival and the copy kept")
def show_sump(envelope_id: TaskId) -> dict[str, Any]:
    return sump().show(envelope_id)


@app.post(f"{API}/sump/<envelope_id>:redrive", summary="Put a message x-sump kept back in the mesh")
def redrive_sump(envelope_id: TaskId, request: Annotated[RedriveRequest, Body()]) -> tuple[dict[str, Any], int]:
    payload = request.payload if "payload" in request.model_fields_set else UNSET
    redriven, answer = sump().redrive(envelope_id, to=request.to, payload=payload, envelope=request.envelope)
    return answer, 202 if redriven else 200


@app.post("/mcp", summary="MCP (streamable HTTP, stateless JSON responses)")
def mcp() -> Response[Any]:
    endpoint = McpEndpoint(
        service(),
        lambda task_id: task_urls(task_id)["status_url"],
        sump_or_none(),
        wait_left=wait_left,
        idempotency_key=app.current_event.headers.get("idempotency-key"),
    )
    answer: dict[str, Any] | None
    try:
        body = app.current_event.json_body
    except ValueError as exc:
        status, answer = 400, endpoint.parse_error(str(exc))
    else:
        status, answer = endpoint.handle(body)
    if answer is None:
        return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body="")
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=answer)


@app.get("/mcp", include_in_schema=False)
def mcp_stream() -> Response[Any]:
    """No server-initiated stream: this endpoint answers each POST on its own."""
    return Response(status_code=405, content_type=content_types.APPLICATION_JSON, body={"message": "use POST"})


def sign_in(event: dict[str, Any]) -> Caller | dict[str, Any]:
    """For the local stack's server, which serves streams itself: the proxy event's caller, as the
    function would take it, or the response refusing it (`GatewayFunction.caller_of`)."""
    return lambda_handler.built.caller_of(event)


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
    tasks = lambda_handler.built.service.as_caller(caller)
    return tasks.follow(task_id, last_event_id, keepalive_seconds=keepalive_seconds, max_seconds=max_seconds)


def _open(event: dict[str, Any]) -> bool:
    """What anyone may read: liveness, and where to sign in."""
    path = str(event.get("path") or "")
    return event.get("httpMethod") == "GET" and (path == "/health" or path.startswith(f"{WELL_KNOWN}/"))


def _signin_refused(event: dict[str, Any], refusal: SignInRefusedError) -> dict[str, Any]:
    """401 naming why, with the challenge the MCP authorization spec asks for: where the protected
    resource's metadata is, so a client finds the issuer to sign in with (503 if the keys are away)."""
    challenge = {"WWW-Authenticate": _challenge(event, refusal)} if refusal.status == 401 else {}
    return _answered_early(refusal.status, str(refusal), {"reason": refusal.reason}, challenge)


def _challenge(event: dict[str, Any], refusal: SignInRefusedError) -> str:
    """`WWW-Authenticate` (RFC 6750, RFC 9728): no error code when no token was sent."""
    metadata = f'resource_metadata="{_quotable(_base_url_of(event))}{WELL_KNOWN}/oauth-protected-resource"'
    if refusal.reason == "missing_token":
        return f"Bearer {metadata}"
    return f'Bearer error="invalid_token", error_description="{_quotable(str(refusal))}", {metadata}'


def _quotable(text: str) -> str:
    """Text as RFC 6750 allows it in a quoted value (printable ASCII but `"` and `\\`): nothing a
    request sends (a token, a Host) can end the header or start another."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else " " for c in text.replace('"', "'"))[:200]


def _not_json(event: dict[str, Any]) -> dict[str, Any] | None:
    """A body that says it is not JSON gets 415 before Powertools would read it as a form."""
    if not event.get("body"):
        return None
    headers = {str(name).lower(): value for name, value in (event.get("headers") or {}).items()}
    media_type = str(headers.get("content-type") or "").split(";")[0].strip().lower()
    if not media_type or media_type == content_types.APPLICATION_JSON or media_type.endswith("+json"):
        return None
    return _answered_early(415, f"content-type: the body must be application/json, not {media_type[:80]!r}")


def _too_deep(event: dict[str, Any]) -> dict[str, Any] | None:
    """A body nested deeper than the gateway takes (`asya_gateway.nesting`) gets 400, at every door."""
    if not event.get("body") or not too_deep(_raw_body(event)):
        return None
    return _answered_early(400, f"body: arrays and objects nest deeper than {MAX_NESTING} levels")


def _answered_early(
    status: int, message: str, more: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A proxy response given before the resolver runs, in the shape of the routes' errors."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
        "body": orjson.dumps({"statusCode": status, "message": message, **(more or {})}).decode(),
        "isBase64Encoded": False,
    }
