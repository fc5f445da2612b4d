"""The local stack's plumbing for the status gateway, with stand-in functions instead of the real ones:
a small CDK stack shaped like the gateway (a table with a stream and its consumer, a REST API proxy, a
schedule rule, and a function nothing invokes) is deployed into the session's endpoint. Checked: what
is read back for each function, HTTP → proxy event → response, the API key, events streamed chunk by
chunk, stream records delivered and re-delivered from a partial failure, and the schedule ticking.

The stand-ins are the functions' code, in `standin/` (their asset).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from asya_cdk.loading import load_mesh
from asya_local.deploy import synthesize_app
from asya_local.deployed_functions import HttpTrigger, ScheduleTrigger, StreamTrigger
from asya_local.endpoint.process import LocalEndpoint
from asya_local.stack import LocalStack

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parent
STACK = "asya-standin"
SCHEDULE_SECONDS = 0.3


# The stack and the tests.


def _standin_stack(app: Any, reports: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_apigateway as apigateway
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_events as events
    from aws_cdk import aws_events_targets as targets
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_lambda_event_sources as sources

    stack = cdk.Stack(app, STACK)
    table = dynamodb.Table(
        stack,
        "Tasks",
        partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    )

    def function(name: str, handler: str) -> lambda_.Function:
        return lambda_.Function(
            stack,
            name,
            function_name=f"{STACK}-{name}",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler=f"standin.{handler}",
            code=lambda_.Code.from_asset(str(HERE / "standin"), exclude=["**/__pycache__"]),
            environment={"STANDIN_DIR": str(reports)},
            timeout=cdk.Duration.seconds(5),
        )

    function("gateway-stream", "stream_handler").add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=10,
            report_batch_item_failures=True,
            retry_attempts=2,
        )
    )
    events.Rule(
        stack,
        "Schedule",
        schedule=events.Schedule.rate(cdk.Duration.minutes(1)),
        targets=[targets.LambdaFunction(function("gateway-backstop", "backstop_handler"))],
    )
    apigateway.LambdaRestApi(
        stack,
        "Api",
        handler=function("gateway", "api_handler"),
        default_method_options=apigateway.MethodOptions(api_key_required=True),
    )
    function("idle", "api_handler")
    cdk.CfnOutput(stack, "TasksTable", value=table.table_name)


@dataclass
class Standin:
    stack: LocalStack
    reports: Path
    http: httpx2.Client

    def wait_for(self, name: str, lines: int = 1, timeout: float = 15.0) -> list[str]:
        report = self.reports / name
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = report.read_text().splitlines() if report.exists() else []
            if len(found) >= lines:
                return found
            time.sleep(0.1)
        raise AssertionError(f"{name}: fewer than {lines} line(s) after {timeout} s")


@pytest.fixture(scope="module")
def standin(endpoint: LocalEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standin]:
    reports = tmp_path_factory.mktemp("standin")
    stack = LocalStack(load_mesh(HERE / "mesh" / "mesh.yaml"), port=endpoint.port, schedule_seconds=SCHEDULE_SECONDS)
    try:
        stack.deploy(synthesize_app(STACK, lambda app: _standin_stack(app, reports)))
        stack.start_workers()
        assert stack.gateway_url is not None
        with httpx2.Client(base_url=stack.gateway_url, headers={"x-api-key": stack.api_key}, timeout=15) as http:
            yield Standin(stack, reports, http)
    finally:
        stack.stop()


def test_each_function_is_read_back_with_what_invokes_it(standin: Standin) -> None:
    triggers = {function.name: function.trigger for function in standin.stack.functions}
    table = standin.stack.client("dynamodb").describe_table(TableName=standin.stack.outputs["TasksTable"])["Table"]
    assert isinstance(triggers[f"{STACK}-gateway"], HttpTrigger)
    stream = triggers[f"{STACK}-gateway-stream"]
    assert isinstance(stream, StreamTrigger)
    assert stream.stream_arn == table["LatestStreamArn"]
    assert (stream.batch_size, stream.retry_attempts, stream.report_failures) == (10, 2, True)
    schedule = triggers[f"{STACK}-gateway-backstop"]
    assert isinstance(schedule, ScheduleTrigger)
    assert schedule.expression == "rate(1 minute)"
    assert f"{STACK}-idle" not in triggers, "nothing invokes it on AWS either"


def test_a_request_becomes_a_proxy_event_and_the_answer_a_response(standin: Standin) -> None:
    response = standin.http.post("/api/v1/things/7?tag=a&tag=b", json={"x": 1})
    event = response.json()
    assert response.status_code == 200
    assert event["httpMethod"] == "POST"
    assert event["path"] == "/api/v1/things/7"
    assert event["pathParameters"] == {"proxy": "api/v1/things/7"}
    assert event["multiValueQueryStringParameters"] == {"tag": ["a", "b"]}
    assert json.loads(event["body"]) == {"x": 1}
    assert event["requestContext"]["identity"]["apiKey"] == standin.stack.api_key
    assert response.headers["X-Echo"] == "1"
    assert response.headers.get_list("set-cookie") == ["a=1", "b=2"]


def test_without_the_api_key_only_health_answers(standin: Standin) -> None:
    refused = standin.http.get("/api/v1/mesh", headers={"x-api-key": "guess"})
    assert refused.status_code == 403
    assert refused.json() == {"message": "Forbidden"}
    assert standin.http.get("/health", headers={"x-api-key": ""}).status_code == 200


def test_events_arrive_one_by_one_before_the_stream_ends(standin: Standin) -> None:
    """The stand-in produces its last event only after the client saw the first: a server that
    buffered the response would deliver nothing until then."""
    events: list[Any] = []
    with standin.http.stream("GET", "/api/v1/mesh/t-1/events?cursor=5") as response:
        assert response.headers["content-type"] == "text/event-stream"
        for event in httpx2.EventSource(response):
            if not events:
                first_received = time.time()
                (standin.reports / "t-1.ack").touch()
            events.append(event.json())
    assert first_received < float((standin.reports / "t-1.last").read_text())
    assert events == [{"status": "running", "after": "5"}, {"status": "succeeded", "acknowledged": True}]


def test_an_unknown_task_is_a_404(standin: Standin) -> None:
    response = standin.http.get("/api/v1/mesh/missing/events")
    assert response.status_code == 404
    assert response.json()["statusCode"] == 404


def test_a_client_that_leaves_ends_the_stream(standin: Standin) -> None:
    with standin.http.stream("GET", "/api/v1/mesh/t-2/events", headers={"Last-Event-ID": "1"}) as response:
        next(response.iter_bytes())
    (standin.reports / "t-2.ack").touch()
    deadline = time.monotonic() + 10
    while not (standin.reports / "t-2.closed").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (standin.reports / "t-2.closed").exists()


def test_stream_records_reach_the_consumer_and_a_failed_one_comes_again(standin: Standin) -> None:
    dynamodb = standin.stack.client("dynamodb")
    table = standin.stack.outputs["TasksTable"]
    for task_id, extra in (("a", {}), ("b", {"fail_once": {"BOOL": True}}), ("c", {})):
        dynamodb.put_item(TableName=table, Item={"id": {"S": task_id}, **extra})
    standin.wait_for("stream.jsonl", lines=4)
    time.sleep(0.5)  # anything delivered more often than it should would show up by now
    seen = [json.loads(line) for line in (standin.reports / "stream.jsonl").read_text().splitlines()]
    order = [record["id"] for record in seen]
    assert order.count("a") == 1
    assert order.count("b") == 2, "delivered again from the failed record"
    assert order[::-1].index("c") < order[::-1].index("b"), "c is (also) delivered after b's second delivery"
    stream_arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    assert {record["source"] for record in seen} == {stream_arn}
    assert all(isinstance(record["created"], int) for record in seen)


def test_the_schedule_ticks_every_few_tenths_of_a_second(standin: Standin) -> None:
    ticks = standin.wait_for("backstop.log", lines=3, timeout=10 * SCHEDULE_SECONDS + 5)
    assert set(ticks) == {"Scheduled Event"}
