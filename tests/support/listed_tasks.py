"""Tasks to find, and the gateway's function that lists them, as the listing's tests and the CLI's use
them: twelve tasks a minute apart, each of the next status, their routes at each place in turn."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from asya.task_store import TaskStore
from asya_gateway import api
from asya_gateway.function import GatewayFunction
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, http_response, proxy_event
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.gateway_unit import OPERATOR_KEY, UNIT_ENVIRONMENT, serve

STATUSES = ("running", "succeeded", "failed", "pending", "paused", "canceled")
ROUTE = ("split", "score", "triage")


def twelve_tasks(task_store: TaskStore) -> TaskService:
    """t00 (the oldest, 10:00 UTC) to t11 (10:11), of the statuses in turn; t00 at split, t01 at score,
    t02 at triage, t03 at split...; odd ones of flow `triage`, even ones of `review`."""
    for number in range(12):
        at = number % len(ROUTE)
        task_store.create(
            {
                "id": f"t{number:02d}",
                "status": STATUSES[number % len(STATUSES)],
                "created_at": f"2026-11-26T10:{number:02d}:00.000Z",
                "flow": "triage" if number % 2 else "review",
                "route": {"prev": list(ROUTE[:at]), "curr": ROUTE[at], "next": list(ROUTE[at + 1 :])},
            }
        )
    return TaskService(GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS), tasks=task_store)


def through_the_function(service: TaskService, monkeypatch: pytest.MonkeyPatch) -> httpx2.MockTransport:
    """HTTP as API Gateway hands it to the gateway's function, which answers from `service`."""
    for name, value in UNIT_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    serve(monkeypatch, lambda: GatewayFunction(service))

    def answer(request: httpx2.Request) -> httpx2.Response:
        target = request.url.raw_path.decode()
        event = proxy_event(
            HttpRequest(request.method, target, [OPERATOR_KEY, *request.headers.items()], request.content), "unit"
        )
        answered = http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", 29)))
        return httpx2.Response(answered.status, headers=answered.headers, content=answered.body)

    return httpx2.MockTransport(answer)


def get(transport: httpx2.MockTransport, **params: str) -> tuple[int, dict[str, Any]]:
    """`GET /api/v1/mesh?params`: the status and the JSON answer."""
    with httpx2.Client(transport=transport, base_url="http://gateway") as client:
        response = client.get("/api/v1/mesh", params=params)
    return response.status_code, json.loads(response.content)
