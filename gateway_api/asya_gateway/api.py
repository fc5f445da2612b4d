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

Every request but `GET /health`, `GET /.well-known/*`, `GET /follow/{id}` and `POST /oauth/register` is
someone's (`caller()`, `asya_gateway.callers`): with `gateway.auth: jwt` it carries a bearer token the
function verifies before routing, or gets 401. `GET /follow/{id}` is the caller's whose follow ticket it
carries.

The routes are grouped by job, each group a module: the tasks' and the sump's here, following a task in
`asya_gateway.follow_routes`, the MCP and A2A doors in `asya_gateway.agent_routes`, sign-in's documents
and registration in `asya_gateway.sign_in_routes`; what they all ask of the request in
`asya_gateway.request_context`.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from asya.envelope import rfc3339
from asya.names import ACTOR_NAME
from asya.short_ids import ID_HEAD_LENGTH
from asya.task_record import stealthy

# the other groups of routes register on the same resolver when this, the function's module, is imported
from asya_gateway import agent_routes, follow_routes, sign_in_routes  # noqa: F401
from asya_gateway.agent_routes import open_a2a_stream
from asya_gateway.api_models import (
    MAX_TASK_ID,
    CreateTask,
    FlyEvent,
    IdempotencyKey,
    RedriveRequest,
    RerunTask,
    ResumeTask,
    StatusEvent,
    TaskId,
    WaitSeconds,
)
from asya_gateway.callers import Caller
from asya_gateway.follow_routes import open_event_stream
from asya_gateway.id_prefix import refuse_filters, tasks_starting_with
from asya_gateway.listing import ALL, TaskFilter, moment
from asya_gateway.request_context import (
    API,
    INTEGRATION_TIMEOUT_SECONDS,
    LAMBDA_FOLLOW_SECONDS,
    base_url,
    built_function,
    caller,
    lambda_handler,
    service,
    sump,
    task_urls,
    wait_left,
)
from asya_gateway.resolver import app
from asya_gateway.service import UNSET as UNSET_INPUT
from asya_gateway.service import Created
from asya_gateway.sump import UNSET
from asya_gateway.task_error import TaskError

# What the function's runtime, the local server and the tests take from the function's module.
__all__ = [
    "INTEGRATION_TIMEOUT_SECONDS",
    "LAMBDA_FOLLOW_SECONDS",
    "base_url",
    "caller",
    "lambda_handler",
    "open_a2a_stream",
    "open_event_stream",
    "sign_in",
]


@app.get("/health", summary="Liveness")
def health() -> dict[str, str]:
    return {"status": "ok", "namespace": service().settings.namespace}


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


def sign_in(event: dict[str, Any]) -> Caller | dict[str, Any]:
    """For the local stack's server, which serves streams itself: the proxy event's caller, as the
    function would take it, or the response refusing it (`GatewayFunction.caller_of`)."""
    return built_function().caller_of(event)
