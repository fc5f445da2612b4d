"""The gateway's side of `bench.cost_per_hop`: the API function creating each task as API Gateway's
proxy integration calls it, and the stream consumer following the tasks table, each metered as the
mesh's functions are."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3

from asya_local.testing.metering import Meter

if TYPE_CHECKING:
    from bench.cost_per_hop import FlowCase, Invocations

NAMESPACE = "cost"
BUCKET = "cost-results"
STREAM_BATCH = 100  # the stream consumer's event source batch size (asya_cdk.gateway)
STREAM_MEMORY_MB = 256  # the stream consumer
# What the envelopes are sealed with (`asya.seal`): read once per execution environment, so not per hop
# (priced as modelled); moto's secrets are found by name as well as by ARN.
SEAL_SECRET = "bench-seal"


@contextmanager
def gateway(case: FlowCase) -> Iterator[Callable[[str, Any], None]]:
    """Creates a task as API Gateway's proxy integration does: the gateway function's entry point given
    the request's event, so its routing, validation and lines are counted with the create. The module's
    entry point serves this case's task service while the run lasts, then is put back."""
    from asya.entry import LambdaEntry
    from asya_gateway import api, request_context
    from asya_gateway.function import GatewayFunction
    from asya_local.functions.lambda_shapes import LambdaContext
    from asya_local.functions.rest_proxy import HttpRequest, proxy_event

    service = task_service(case)
    entry: LambdaEntry[GatewayFunction] = LambdaEntry(lambda: GatewayFunction(service))
    context = LambdaContext(f"asya-{NAMESPACE}-gateway", timeout_seconds=30)

    def create(flow: str, payload: Any) -> None:
        body = json.dumps({"flow": flow, "payload": payload}).encode()
        request = HttpRequest("POST", "/api/v1/mesh", [("content-type", "application/json")], body)
        answer = entry(proxy_event(request, "bench"), context)
        if answer["statusCode"] != 201:
            raise RuntimeError(f"the gateway did not create the task: {answer}")

    served = api.lambda_handler  # the module's name for it, and the one its routes read
    api.lambda_handler = request_context.lambda_handler = entry
    try:
        yield create
    finally:
        api.lambda_handler = request_context.lambda_handler = served


def task_service(case: FlowCase) -> Any:
    from asya_gateway.service import TaskService
    from asya_gateway.settings import Flow, GatewaySettings
    from asya_local.testing.tables import EVENTS, TASKS

    flows = {
        name: Flow(
            name=name,
            route=case.mesh.flow_route(name),
            timeout=flow.timeout,
            input_schema=flow.input_schema,
            program=case.mesh.programs.get(name),
        )
        for name, flow in case.mesh.config.flows.items()
    }
    settings = GatewaySettings(case.mesh.config.namespace, TASKS, EVENTS, BUCKET, flows, seal_secret=SEAL_SECRET)
    return TaskService(settings)


def follow_stream(meter: Meter, calls: Invocations, namespace: str) -> None:
    """The stream consumer, fed the tasks table's whole stream in batches as its event source would;
    reading the stream is free for a Lambda trigger, so only what the consumer writes is counted."""
    from asya.live import EventLog
    from asya.telemetry import Telemetry
    from asya_gateway.stream import follow
    from asya_local.functions.lambda_shapes import dynamodb_stream_event
    from asya_local.testing.tables import EVENTS, TASKS

    with meter.paused():
        arn = boto3.client("dynamodb").describe_table(TableName=TASKS)["Table"]["LatestStreamArn"]
        records = stream_records(TASKS)
    log, telemetry = EventLog(EVENTS), Telemetry(namespace, "gateway-stream")

    def consume(batch: list[dict[str, Any]]) -> None:
        try:
            follow(dynamodb_stream_event(arn, batch)["Records"], log, telemetry)
        finally:
            telemetry.flush()

    invoke = calls.timed("gateway-stream", STREAM_MEMORY_MB, consume)
    for start in range(0, len(records), STREAM_BATCH):
        invoke(records[start : start + STREAM_BATCH])


def stream_records(table: str) -> list[dict[str, Any]]:
    """The table's stream records, read from moto's memory: its in-process mock does not serve the
    DynamoDB Streams API (a Lambda trigger's reads are not billed anyway)."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.utilities import dynamo_json_dump

    shard = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table(table).stream_shard
    return [json.loads(dynamo_json_dump(item.record)) for item in (shard.items if shard else [])]
