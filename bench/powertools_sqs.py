"""A hand-written SQS → Lambda → SQS hop on Powertools, without the mesh: what `bench.cold_start`
compares an actor's cold start with.

It does what a careful user writes by hand for the same hop: a pydantic model of the envelope that
validates the body (id, route, status, payload), the same function called on the payload, the route
shifted, the envelope sent to the next actor's queue; Powertools' `Logger`, `Metrics` and
`BatchProcessor` with its partial batch response; the SQS client made at import, as Powertools advises.
It checks no seal, claims no hop and reports no status: those are the mesh's own.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import AwareDatetime, BaseModel, Field

from bench.cold_start_work import work

QUEUE_URL_PREFIX = os.environ["QUEUE_URL_PREFIX"]  # the next actor's queue URL is this and its name


class Route(BaseModel):
    prev: list[str] = Field(default_factory=list)
    curr: str
    next: list[str] = Field(default_factory=list)


class Status(BaseModel):
    phase: str = "pending"
    actor: str | None = None
    attempt: Annotated[int, Field(ge=1)] = 1
    created_at: AwareDatetime | None = None


class Envelope(BaseModel):
    id: Annotated[str, Field(min_length=1)]
    route: Route
    headers: dict[str, Any] = Field(default_factory=dict)
    status: Status | None = None
    payload: Any


logger = Logger()
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)
sqs = boto3.client("sqs")


def record_handler(record: SQSRecord) -> None:
    envelope = Envelope.model_validate_json(record.body)
    envelope.payload = work(envelope.payload)
    route = envelope.route
    route.prev.append(route.curr)
    route.curr = route.next.pop(0)
    sqs.send_message(QueueUrl=f"{QUEUE_URL_PREFIX}{route.curr}", MessageBody=envelope.model_dump_json())
    metrics.add_metric(name="MessagesSent", unit=MetricUnit.Count, value=1)


@metrics.log_metrics
@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
