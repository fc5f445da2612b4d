"""The API function's entry point, and what every route of it asks of the request it serves: who sent it,
the task service as that caller sees it, where the API is reachable, how long it may still wait. Kept
apart from the routes so that each group of them (`asya_gateway.api`, `.follow_routes`, `.agent_routes`,
`.sign_in_routes`) reads the same request the same way."""

from __future__ import annotations

import time

from asya.entry import LambdaEntry
from asya_gateway.callers import Caller
from asya_gateway.early_answers import base_url_of
from asya_gateway.function import GatewayFunction
from asya_gateway.resolver import app
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.sump import Sump
from asya_gateway.task_error import TaskError

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


def built_function() -> GatewayFunction:
    """What the entry point built at the first event. Read through this, never by importing the entry:
    a test or a benchmark puts its own entry in its place (`lambda_handler`), and every route sees it."""
    return lambda_handler.built


def service() -> TaskService:
    """The task service as the current request's caller sees it: every door that goes through it
    (REST, MCP, A2A) shows and changes the caller's own tasks only, an admin's every task."""
    return built_function().service.as_caller(caller())


def caller() -> Caller:
    """Who sent the request being served (`asya_gateway.callers`)."""
    return built_function().caller


def sump_or_none() -> Sump | None:
    """x-sump's entries as the current request's caller sees them; None without a sump table."""
    index = built_function().sump_index
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


def wait_left(asked: float) -> float:
    """How long a request may still wait: what it asked, within what API Gateway leaves of its 29 s
    counted from the request's arrival (`requestTimeEpoch`: a cold start, the create and the answer's
    own reading and writing included), less `ANSWER_SECONDS` for the answer."""
    arrived = app.current_event.request_context.request_time_epoch / 1000
    return max(0.0, min(asked, arrived + INTEGRATION_TIMEOUT_SECONDS - ANSWER_SECONDS - time.time()))
