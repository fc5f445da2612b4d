"""The gateway's function behind an HTTP API (`gateway.api: http`): the payload format 1.0 event the
integration sends goes through the same REST resolver, and every answer is the REST API's, with URLs
that have no stage in them (`$default` is served at the API's root) and waits measured from the
request's arrival as API Gateway counts it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from asya_gateway import api
from asya_gateway.callers import AuthSettings, Caller, aws_caller
from asya_gateway.settings import Flow
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpResponse, http_response
from tests.support.gateway_unit import gateway_on_moto
from tests.support.http_api_events import HOST, http_api_event

FLOW = "f"
JSON = {"content-type": "application/json"}
SIGNER = {"userArn": "arn:aws:iam::111122223333:user/unit"}  # what IAM authorization names on every request


class Gateway:
    def __init__(self, sqs: Any, queue: str) -> None:
        self.sqs, self.queue = sqs, queue

    def send(self, method: str, target: str, body: Any = None, arrived_seconds_ago: float = 0.0) -> HttpResponse:
        raw = json.dumps(body).encode() if body is not None else b""
        event = http_api_event(
            method, target, raw, JSON if raw else {}, arrived_seconds_ago=arrived_seconds_ago, identity=SIGNER
        )
        return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=30)))

    def sent(self) -> list[dict[str, Any]]:
        received = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, VisibilityTimeout=0)
        return [json.loads(m["Body"]) for m in received.get("Messages", [])]


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("ASYA_PUBLIC_URL", raising=False)
        with gateway_on_moto({FLOW: Flow(name=FLOW, route=["a"], input_schema={"type": "object"})}) as (sqs, queue, _):
            yield Gateway(sqs, queue)


def test_a_task_created_through_the_http_api_gets_urls_without_a_stage(gateway: Gateway) -> None:
    created = gateway.send("POST", "/api/v1/mesh", {"flow": FLOW, "payload": {"n": 1}})
    assert created.status == 201, created.body
    body = orjson.loads(created.body)
    assert body["status_url"] == f"https://{HOST}/api/v1/mesh/{body['id']}"
    assert body["events_url"] == f"https://{HOST}/api/v1/mesh/{body['id']}/events"
    [envelope] = gateway.sent()
    assert (envelope["id"], envelope["payload"]) == (body["id"], {"n": 1})


def test_the_http_apis_paths_and_queries_reach_the_same_routes(gateway: Gateway) -> None:
    task_id = orjson.loads(gateway.send("POST", "/api/v1/mesh", {"flow": FLOW, "payload": {}}).body)["id"]
    shown = gateway.send("GET", f"/api/v1/mesh/{task_id}")
    assert shown.status == 200, shown.body
    assert orjson.loads(shown.body)["status"] == "pending"
    listed = orjson.loads(gateway.send("GET", "/api/v1/mesh?limit=1&status=all").body)
    assert [task["id"] for task in listed["tasks"]] == [task_id]
    health = gateway.send("GET", "/health")
    assert (health.status, orjson.loads(health.body)) == (200, {"status": "ok", "namespace": "n"})
    assert gateway.send("GET", "/api/v1/mesh?limit=0").status == 422


def test_a_wait_ends_within_the_integration_timeout_counted_from_the_requests_arrival(gateway: Gateway) -> None:
    started = time.monotonic()
    late = gateway.send("POST", "/api/v1/mesh?wait=20", {"flow": FLOW, "payload": {}}, arrived_seconds_ago=27)
    assert late.status == 202, "created, and answered at once: 27 s of the 29 are gone"
    assert time.monotonic() - started < 5
    started = time.monotonic()
    fresh = gateway.send("POST", "/api/v1/mesh?wait=0.5", {"flow": FLOW, "payload": {}})
    assert fresh.status == 202
    assert time.monotonic() - started >= 0.5, "a request that just arrived waits what it asked"


@pytest.mark.parametrize("where", ["identity", "authorizer.iam"])
def test_an_iam_authorized_caller_of_the_http_api_is_named_by_its_principal(where: str) -> None:
    """Whether an HTTP API's payload format 1.0 names an IAM caller in `identity` (as the REST API does)
    or in `authorizer.iam` (as format 2.0 does) is not said plainly in AWS's documentation: either
    names the caller, so no SigV4 caller is left without its tasks."""
    role = "arn:aws:sts::111122223333:assumed-role/Loader"
    named = {"accountId": "111122223333", "caller": "AROAEXAMPLE:job-7", "userArn": f"{role}/job-7"}
    event = http_api_event("POST", "/api/v1/mesh", identity=named if where == "identity" else None)
    if where == "authorizer.iam":
        event["requestContext"]["authorizer"] = {"iam": {**named, "callerId": named["caller"], "userId": "AROAEXAMPLE"}}
    auth = AuthSettings(mode="iam", admin_principals=("arn:aws:sts::111122223333:assumed-role/Loader/*",))
    assert aws_caller(event, auth) == Caller(owner=f"iam:{role}", admin=True, principal=f"{role}/job-7")
