"""A task created once however often a client retries (`Idempotency-Key`), and a wait that answers
within API Gateway's 29 s counted from the request's arrival: through the gateway's function, as API
Gateway hands requests over, against moto."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import orjson
import pytest
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

FLOW = "f"
JSON = ("content-type", "application/json")


class Gateway:
    def __init__(self, sqs: Any, queue: str, tasks: TaskStore) -> None:
        self.sqs, self.queue, self.tasks = sqs, queue, tasks

    def send(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             arrived_seconds_ago: float = 0.0) -> HttpResponse:  # fmt: skip
        given = [JSON, OPERATOR_KEY, *(headers or {}).items()]
        event = proxy_event(HttpRequest(method, path, given, json.dumps(body).encode() if body else b""), "unit")
        event["requestContext"]["requestTimeEpoch"] = int((time.time() - arrived_seconds_ago) * 1000)
        return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))

    def create(self, payload: Any, key: str | None = None) -> HttpResponse:
        headers = {"Idempotency-Key": key} if key is not None else {}
        return self.send("POST", "/api/v1/mesh", {"flow": FLOW, "payload": payload}, headers)

    def sent(self) -> list[dict[str, Any]]:
        received = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, VisibilityTimeout=0)
        return [json.loads(m["Body"]) for m in received.get("Messages", [])]


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        client = boto3.client("dynamodb")
        create_tables(client)
        sqs = boto3.client("sqs")
        queue = sqs.create_queue(QueueName="asya-n-a")["QueueUrl"]
        flows = {FLOW: Flow(name=FLOW, route=["a"], input_schema={"type": "object"})}
        config = GatewaySettings(
            namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows, mcp_wait_seconds=20, sump_table=SUMP
        )
        tasks = TaskStore(TASKS, client=client)
        service = TaskService(config, tasks=tasks, sqs=sqs)
        patch.setattr(api, "lambda_handler", LambdaEntry(lambda: api.GatewayFunction(service)))
        yield Gateway(sqs, queue, tasks)


def test_the_same_create_three_times_with_one_key_makes_one_task(gateway: Gateway) -> None:
    answers = [gateway.create({"n": 1}, key="order-7") for _ in range(3)]
    assert [a.status for a in answers] == [201, 200, 200]
    bodies = [orjson.loads(a.body) for a in answers]
    assert len({body["id"] for body in bodies}) == 1
    assert [body["replayed"] for body in bodies] == [False, True, True]
    assert gateway.tasks.get(bodies[0]["id"]) is not None
    # never picked up yet: sent again each time (its first actor's claim keeps one from running twice)
    assert {envelope["id"] for envelope in gateway.sent()} == {bodies[0]["id"]}
    other = orjson.loads(gateway.create({"n": 1}, key="order-8").body)
    assert other["id"] != bodies[0]["id"]


def test_a_reused_key_for_another_request_is_a_422(gateway: Gateway) -> None:
    assert gateway.create({"n": 1}, key="k-1").status == 201
    refused = gateway.create({"n": 2}, key="k-1")
    assert refused.status == 422
    assert "Idempotency-Key 'k-1' was used for another request" in orjson.loads(refused.body)["message"]


def test_a_task_already_picked_up_is_not_sent_again(gateway: Gateway) -> None:
    created = orjson.loads(gateway.create({"n": 1}, key="k-2").body)
    gateway.sent()  # drained below
    gateway.sqs.purge_queue(QueueUrl=gateway.queue)
    gateway.tasks.cancel(created["id"])  # no longer pending
    replayed = gateway.create({"n": 1}, key="k-2")
    assert replayed.status == 200
    assert gateway.sent() == []


@pytest.mark.parametrize(
    ("key", "headers", "message"),
    [
        ("two words", {}, "Idempotency-Key: 1 to 255 printable ASCII characters"),
        ("k-3", {"x-asya-mesh-status": "off"}, "a task with x-asya-mesh-status: off has no record"),
    ],
)
def test_a_key_that_cannot_be_kept_is_a_400(gateway: Gateway, key: str, headers: dict[str, str], message: str) -> None:
    answer = gateway.send(
        "POST", "/api/v1/mesh", {"flow": FLOW, "payload": {}, "headers": headers}, {"Idempotency-Key": key}
    )
    assert answer.status == 400
    assert message in orjson.loads(answer.body)["message"]


def test_a_wait_counts_from_the_requests_arrival(gateway: Gateway) -> None:
    """A request API Gateway received 27 s ago (after a long cold start, say) has no time left to wait in
    its 29, less 3 for the answer: it answers 202 at once rather than a 504 at 29 s; one received 23.5 s
    ago waits 2.5 s."""
    started = time.monotonic()
    late = gateway.send("POST", "/api/v1/mesh?wait=20", {"flow": FLOW, "payload": {}}, arrived_seconds_ago=27)
    assert late.status == 202
    assert time.monotonic() - started < 2
    started = time.monotonic()
    task_id = orjson.loads(late.body)["id"]
    gateway.send("GET", f"/api/v1/mesh/{task_id}?wait=20", arrived_seconds_ago=23.5)
    assert 1.5 <= time.monotonic() - started < 4, "29 - 3 - 23.5: 2.5 s of waiting"
