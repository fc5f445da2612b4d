"""Hostile requests through the gateway's Lambda function, as API Gateway hands them over (proxy events
built by the local stack's stand-in for it), against moto: each gets its 4xx naming what is wrong, or a
correct 2xx/404, and never a 5xx or a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from asya.entry import LambdaEntry
from asya.task_store import TaskStore
from asya_gateway import api
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, http_response, proxy_event
from asya_local.testing.tables import EVENTS, SUMP, TASKS, create_tables
from tests.support.gateway_unit import OPERATOR_KEY, UNIT_ENVIRONMENT
from tests.support.hostile_gateway import API, CORPUS, FLOW, FLOW_SCHEMA, JSON_HEADERS, Request

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Gateway:
    """The gateway's function behind API Gateway's proxy integration, in this process."""

    def __init__(self) -> None:
        created = self.send(HttpRequest("POST", API, list(JSON_HEADERS), b'{"route": ["a"], "payload": {}}'))
        self.task_id: str = orjson.loads(created.body)["id"]
        assert self.send(HttpRequest("DELETE", f"{API}/{self.task_id}", [])).status == 200

    def send(self, request: HttpRequest) -> HttpResponse:
        event = proxy_event(
            HttpRequest(request.method, request.target, [OPERATOR_KEY, *request.headers], request.body), "unit"
        )
        return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))

    def answer(self, case: Request) -> HttpResponse:
        return self.send(HttpRequest(case.method, case.path_for(self.task_id), list(case.headers), case.body or b""))


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    """One gateway for the module (a fresh moto per case would take most of the time): the cases
    create tasks, but none reads a listing it did not make."""
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        client = boto3.client("dynamodb")
        create_tables(client)
        sqs = boto3.client("sqs")
        sqs.create_queue(QueueName="asya-n-a")
        flows = {FLOW: Flow(name=FLOW, route=["a"], input_schema=FLOW_SCHEMA)}
        config = GatewaySettings(
            namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows, mcp_wait_seconds=0, sump_table=SUMP
        )
        service = TaskService(config, tasks=TaskStore(TASKS, client=client), sqs=sqs)
        patch.setattr(api, "lambda_handler", LambdaEntry(lambda: api.GatewayFunction(service)))
        yield Gateway()


def assert_answered(response: HttpResponse, what: str) -> Any:
    """Not a 5xx, no traceback, and a 4xx says what is wrong in JSON. Returns the JSON body (or None)."""
    assert response.status < 500, f"{what}: {response.status} {response.body[:300]!r}"
    assert b"Traceback (most recent call last)" not in response.body, f"{what}: {response.body[:300]!r}"
    if not response.body:
        return None
    content_type = {name.lower(): value for name, value in response.headers}["content-type"]
    if content_type.startswith("text/event-stream"):
        return None
    document = orjson.loads(response.body)
    if 400 <= response.status < 500 and "jsonrpc" not in document:
        message = document.get("message")
        assert isinstance(message, str), f"{what}: {document}"
        assert message, f"{what}: an empty message"
    return document


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_each_hostile_request_gets_its_answer(gateway: Gateway, case: Request) -> None:
    response = gateway.answer(case)
    document = assert_answered(response, case.name)
    assert response.status == case.status, f"{case.name}: {response.status} {response.body[:400]!r}"
    assert case.names in orjson.dumps(document).decode(), f"{case.name}: {case.names!r} not in {document}"


def test_a_route_may_name_x_pause_of_the_crew_as_a_flow_may(gateway: Gateway) -> None:
    boto3.client("sqs").create_queue(QueueName="asya-n-x-pause")  # the crew's, deployed with every mesh
    body = orjson.dumps({"route": ["a", "x-pause", "a"], "payload": {}})
    created = gateway.send(HttpRequest("POST", API, list(JSON_HEADERS), body))
    assert created.status == 201, created.body
    assert orjson.loads(created.body)["task"]["route"]["next"] == ["x-pause", "a"]


def test_a_field_of_the_wrong_type_is_named_with_what_it_should_be(gateway: Gateway) -> None:
    body = {"route": ["a"], "payload": {}, "timeout": True, "headers": []}
    response = gateway.send(HttpRequest("POST", API, list(JSON_HEADERS), orjson.dumps(body)))
    document = assert_answered(response, "create")
    assert response.status == 422
    assert {tuple(problem["loc"]) for problem in document["detail"]} == {("body", "timeout"), ("body", "headers")}
    assert "body.timeout: Input should be a valid number" in document["message"]
    assert "True" not in document["message"], "the answer does not echo the input"


def test_a_number_is_still_a_number(gateway: Gateway) -> None:
    """Strict, not stricter: an integer is a valid float (JSON has one number type)."""
    body = orjson.dumps({"route": ["a"], "payload": {}, "timeout": 60})
    created = gateway.send(HttpRequest("POST", API, list(JSON_HEADERS), body))
    assert created.status == 201, created.body
    assert orjson.loads(created.body)["task"]["deadline_at"]
    progress = orjson.dumps({"type": "status", "status": "running", "progress": 50})
    task_id = orjson.loads(created.body)["id"]
    reported = gateway.send(HttpRequest("POST", f"{API}/{task_id}/events", list(JSON_HEADERS), progress))
    assert reported.status == 202, reported.body
    assert orjson.loads(gateway.send(HttpRequest("GET", f"{API}/{task_id}", [])).body)["progress"] == 50


def test_the_listing_takes_flow_since_and_roots_and_the_flows_are_listed(gateway: Gateway) -> None:
    body = orjson.dumps({"flow": FLOW, "payload": {"n": 1}})
    created = orjson.loads(gateway.send(HttpRequest("POST", API, list(JSON_HEADERS), body)).body)
    query = f"status=pending&flow={FLOW}&roots=true&since=2000-01-01T00:00:00Z"
    listed = gateway.send(HttpRequest("GET", f"{API}?{query}", []))
    assert listed.status == 200, listed.body
    assert created["id"] in [task["id"] for task in orjson.loads(listed.body)["tasks"]]
    later = gateway.send(HttpRequest("GET", f"{API}?status=pending&since=2999-01-01T00:00:00%2B02:00", []))
    assert orjson.loads(later.body)["tasks"] == [], "an offset is read as the moment it names"
    bad = gateway.send(HttpRequest("GET", f"{API}?status=pending&since=yesterday", []))
    assert (bad.status, "since" in orjson.loads(bad.body)["message"]) == (400, True)
    flows = orjson.loads(gateway.send(HttpRequest("GET", API.replace("/mesh", "/flows"), [])).body)["flows"]
    assert flows[FLOW]["route"] == ["a"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "flow": JSON,
        "route": JSON | st.lists(st.text(max_size=6), max_size=3),
        "payload": JSON,
        "headers": JSON,
        "timeout": JSON,
        "type": st.sampled_from(["status", "fly"]) | JSON,
        "status": st.sampled_from(["running", "failed"]) | JSON,
        "progress": JSON,
        "data": JSON,
        "input": JSON,
        "jsonrpc": st.just("2.0"),
        "id": JSON,
        "method": st.sampled_from(["tools/call", "tools/list", "initialize"]) | JSON,
        "params": JSON,
    },
)


def _written(value: object) -> bytes:
    """As any JSON writer might: big integers, NaN and lone surrogates (as `\\ud800` escapes) included."""
    return json.dumps(value).encode()


BODIES = st.binary(max_size=64) | FIELDS.map(_written) | JSON.map(_written)
POSTS = st.sampled_from(
    [API, f"{API}/{{task}}/events", f"{API}/{{task}}/resume", "/mcp", "/a2a/tasks/x:cancel", "/api/v1/sump/x:redrive"]
)


@PROPERTY
@given(target=POSTS, body=BODIES)
def test_any_body_is_answered_without_a_server_error(gateway: Gateway, target: str, body: bytes) -> None:
    path = target.replace("{task}", gateway.task_id)
    assert_answered(gateway.send(HttpRequest("POST", path, list(JSON_HEADERS), body)), f"POST {path} {body[:80]!r}")


QUERY = st.lists(st.tuples(st.sampled_from(["status", "limit", "cursor", "x"]), st.text(max_size=40)), max_size=3).map(
    lambda pairs: "&".join(f"{name}={value.encode('utf-8', 'surrogatepass').hex()[:40]}" for name, value in pairs)
)
RAW_QUERY = st.text(st.characters(codec="ascii", exclude_characters="#"), max_size=60)


@settings(PROPERTY, max_examples=30)
@given(query=QUERY | RAW_QUERY)
def test_any_query_string_is_answered_without_a_server_error(gateway: Gateway, query: str) -> None:
    for target in (f"{API}?{query}", f"{API}/{gateway.task_id}/events?{query}"):
        assert_answered(gateway.send(HttpRequest("GET", target, [])), f"GET {target}")


# An id ending in a newline is left out: Powertools matches routes with `$`, which matches before a final
# newline, so `/api/v1/mesh/%0A` is the list of tasks (200), harmlessly.
TASK_IDS = st.text(st.characters(codec="utf-8", exclude_characters="/?#"), min_size=1, max_size=300).filter(
    lambda text: not text.endswith("\n")
)


@PROPERTY
@given(task_id=TASK_IDS, method=st.sampled_from(["GET", "DELETE"]), events=st.booleans())
def test_any_path_id_is_answered_without_a_server_error(
    gateway: Gateway, task_id: str, method: str, events: bool
) -> None:
    from urllib.parse import quote

    target = f"{API}/{quote(task_id, safe='')}" + ("/events" if events and method == "GET" else "")
    response = gateway.send(HttpRequest(method, target, []))
    assert_answered(response, f"{method} {target}")
    assert response.status in (404, 422), f"{method} {target!r}: {response.status}"
