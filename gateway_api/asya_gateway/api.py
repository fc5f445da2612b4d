"""The gateway's HTTP API (docs/status.md): Powertools' REST resolver, with request validation and the
OpenAPI document generated from these routes (`GET /api/v1/openapi.json`).

    POST   /api/v1/mesh                     create a task (flow or route, payload, headers, timeout);
                                            ?wait=<seconds>: answer with its result if it ends in time
    GET    /api/v1/mesh                     list tasks, newest first (?status=, ?flow=, ?actor=, ?since=,
                                            ?until=, ?roots=, ?limit=, ?cursor=); ?id_prefix=: the tasks
                                            a short id names (`asya_gateway.id_prefix`)
    GET    /api/v1/mesh/{id}                one task; ?wait=<seconds>: once it ends, or when the wait runs out
    DELETE /api/v1/mesh/{id}                cancel (idempotent, cascades to fan-out branches)
    GET    /api/v1/mesh/{id}/events         follow it: SSE (`asya_gateway.sse`)
    POST   /api/v1/mesh/{id}/ticket         a follow ticket: what a browser follows it with (`asya_gateway.tickets`)
    GET    /follow/{id}?ticket=             follow it with that ticket, no credential: a browser's EventSource
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
    GET    /.well-known/oauth-authorization-server      the gateway as MCP hosts' authorization server, for
    GET    /.well-known/openid-configuration            the stack's Cognito pool (`asya_gateway.oauth`)
    POST   /oauth/register                  an MCP host registers a client of the pool (RFC 7591)

The MCP and A2A doors are imported by their routes at their first request, not at every cold start:
MCP's protocol types (`mcp_types`, a hundred-odd pydantic models) and the A2A endpoint and card cost a
new execution environment over 100 ms (`python -m bench.cold_start`), and a REST request needs none.

Every request but `GET /health`, `GET /.well-known/*`, `GET /follow/{id}` and `POST /oauth/register` is
someone's (`caller()`, `asya_gateway.callers`): with `gateway.auth: jwt` it carries a bearer token the
function verifies before routing, or gets 401. `GET /follow/{id}` is the caller's whose follow ticket it
carries.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query

from asya.entry import LambdaEntry
from asya.envelope import rfc3339
from asya.live import CURSOR_PATTERN
from asya.names import ACTOR_NAME, OAUTH_REGISTER_PATH
from asya.short_ids import ID_HEAD_LENGTH
from asya.task_record import stealthy
from asya_gateway.api_models import (
    EVENT_CURSOR,
    MAX_TASK_ID,
    CreateTask,
    EventCursor,
    FlyEvent,
    IdempotencyKey,
    RedriveRequest,
    RerunTask,
    ResumeTask,
    StatusEvent,
    TaskId,
    WaitSeconds,
)
from asya_gateway.callers import OPERATOR, Caller
from asya_gateway.early_answers import WELL_KNOWN, base_url_of, raw_body, url_base
from asya_gateway.function import GatewayFunction
from asya_gateway.id_prefix import refuse_filters, tasks_starting_with
from asya_gateway.listing import ALL, TaskFilter, moment
from asya_gateway.nesting import too_deep
from asya_gateway.oauth import Registrar, RegistrationError
from asya_gateway.resolver import app
from asya_gateway.service import UNSET as UNSET_INPUT
from asya_gateway.service import Created, TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.sump import UNSET, Sump
from asya_gateway.task_error import TaskError
from asya_gateway.tickets import FOLLOW_PREFIX, MAX_TICKET, follow_url

API = "/api/v1"
LAMBDA_FOLLOW_SECONDS = 20.0  # under API Gateway's 29 s integration timeout
# API Gateway ends every request this long after it arrived: the REST API's limit, and the HTTP API's
# integration timeout as the stack sets it (asya_cdk.http_api; its own ceiling is 30 s)
INTEGRATION_TIMEOUT_SECONDS = 29.0
ANSWER_SECONDS = 3.0  # kept back from a wait for the answer: a GetItem, an S3 read, the JSON


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
    return base_url_of(app.current_event.raw_event)


def task_urls(task_id: str, base: str | None = None) -> dict[str, str]:
    status = f"{base if base is not None else base_url()}{API}/mesh/{task_id}"
    return {"status_url": status, "events_url": f"{status}/events"}


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
    server = lambda_handler.built.registrar  # the gateway stands as the pool's, where it registers clients
    return {
        "resource": f"{base_url()}{path}",
        "authorization_servers": [base_url() if server is not None else auth.issuer.url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": auth.requestable_scopes,
    }


@app.get(f"{WELL_KNOWN}/oauth-authorization-server", summary="The authorization server MCP hosts use (RFC 8414)")
def authorization_server() -> dict[str, Any]:
    return _registrar().server.metadata(base_url())


@app.get(f"{WELL_KNOWN}/openid-configuration", summary="The same document, where a host behind a stage finds it")
def authorization_server_oidc() -> dict[str, Any]:
    return _registrar().server.metadata(base_url())


@app.post(OAUTH_REGISTER_PATH, summary="Register an MCP host's client of the mesh's Cognito pool (RFC 7591)")
def register_client() -> Response[Any]:
    registrar, event = _registrar(), app.current_event
    try:
        try:
            body = event.json_body
        except ValueError:
            raise RegistrationError("invalid_client_metadata", "the body is not JSON") from None
        answer = registrar.register(registrar.server.client_request(body), event.request_context.identity.source_ip)
    except RegistrationError as refused:
        return Response(status_code=refused.status, content_type=content_types.APPLICATION_JSON, body=refused.answer())
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=answer)


def _registrar() -> Registrar:
    registrar = lambda_handler.built.registrar
    if registrar is None:
        raise TaskError(404, "this gateway registers no clients (it needs gateway.jwt.cognito and registration)")
    return registrar


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
    id_prefix: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_TASK_ID,
            description=f"Only tasks whose id starts with it, whatever its case (at least {ID_HEAD_LENGTH} "
            "characters, or a whole id): given alone, answered in one page, `more` saying whether more match",
        ),
    ] = None,
) -> dict[str, Any]:
    if id_prefix is not None:
        given = {"status": status not in (None, ALL), "cursor": cursor, "flow": flow, "actor": actor}
        refuse_filters(given | {"since": since, "until": until, "roots": roots})
        return tasks_starting_with(service().listing, id_prefix, limit)
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
    from asya_gateway.a2a_card import public_card  # at its first request: see the module's note

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
    from asya_gateway.a2a import A2aEndpoint  # at its first request: see the module's note
    from asya_gateway.a2a_card import extended_card

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
    answer = endpoint.handle(raw_body(event.raw_event), headers)
    if isinstance(answer, dict) or answer is None:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=answer or {})
    return Response(
        status_code=200, content_type="text/event-stream", body="".join(answer), headers={"Cache-Control": "no-cache"}
    )


def open_a2a_stream(
    body: bytes, headers: Mapping[str, str], caller: Caller = OPERATOR
) -> Iterator[str] | dict[str, Any] | None:
    """For the local server, which streams: a streaming A2A request's SSE chunks as they come (a
    JSON-RPC error answer if it is refused); None for any other request, which the function answers.
    The task's URLs are made from the request's headers, as the function makes them (no stage); its
    tasks are `caller`'s (`sign_in`)."""
    from asya_gateway.a2a import A2aEndpoint  # at its first request: see the module's note

    if too_deep(body):
        return None  # the function refuses it (`_too_deep`)
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    base = url_base(lowered, None)
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


LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", pattern=CURSOR_PATTERN, max_length=64)]


@app.get(f"{API}/mesh/<task_id>/events", summary="Follow a task (Server-Sent Events)")
def task_events(task_id: TaskId, cursor: EventCursor = None, last_event_id: LastEventId = None) -> Response[str]:
    return _events(task_id, last_event_id or cursor)


@app.post(
    f"{API}/mesh/<task_id>/ticket",
    summary="A ticket a browser follows the task with, for a few minutes (`asya_gateway.tickets`)",
)
def follow_ticket(task_id: TaskId) -> dict[str, Any]:
    service().view(task_id)  # a task the caller may not see is "no task" (404), as everywhere
    ticket, expires = lambda_handler.built.tickets.issue(task_id, caller())
    return {
        "ticket": ticket,
        "expires_at": rfc3339(dt.datetime.fromtimestamp(expires, dt.UTC)),
        "follow_url": follow_url(base_url(), task_id, ticket),
    }


@app.get(f"{FOLLOW_PREFIX}<task_id>", summary="Follow a task with a ticket, as a browser's EventSource does")
def task_events_ticketed(
    task_id: TaskId,
    ticket: Annotated[str, Query(min_length=1, max_length=MAX_TICKET, description="What POST .../ticket answered")],
    cursor: EventCursor = None,
    last_event_id: LastEventId = None,
) -> Response[str]:
    """The caller is the ticket's (`GatewayFunction.caller_of` opened it before routing): the route
    declares `ticket` for the API's validation and its document only."""
    del ticket
    return _events(task_id, last_event_id or cursor)


def _events(task_id: str, cursor: str | None) -> Response[str]:
    chunks = open_event_stream(task_id, cursor, max_seconds=LAMBDA_FOLLOW_SECONDS, caller=caller())
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
    from asya_gateway.mcp import McpEndpoint  # at its first request: see the module's note

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
