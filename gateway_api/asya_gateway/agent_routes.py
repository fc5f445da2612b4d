"""The mesh as an agent: its A2A card and JSON-RPC endpoint (`POST /a2a`), and its flows as MCP tools
(`POST /mcp`). Routes of the API function (`asya_gateway.api`).

The MCP and A2A doors are imported by their routes at their first request, not at every cold start:
MCP's protocol types (`mcp_types`, a hundred-odd pydantic models) and the A2A endpoint and card cost a
new execution environment over 100 ms (`python -m bench.cold_start`), and a REST request needs none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types

from asya_gateway.api_models import TaskId
from asya_gateway.callers import OPERATOR, Caller
from asya_gateway.early_answers import raw_body, url_base
from asya_gateway.nesting import too_deep
from asya_gateway.request_context import (
    LAMBDA_FOLLOW_SECONDS,
    base_url,
    built_function,
    service,
    sump_or_none,
    task_urls,
    wait_left,
)
from asya_gateway.resolver import app
from asya_gateway.task_error import TaskError


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
    endpoint = A2aEndpoint(built_function().service.as_caller(caller), lambda task_id: task_urls(task_id, base))
    return endpoint.handle(body, lowered, streams_only=True)


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
