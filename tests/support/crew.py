"""The crew's functions in this process, on moto: x-sink and x-sump as their Lambda functions are
built, a batch of bodies delivered to one, and what it kept in S3 and sent on."""

from __future__ import annotations

import json
from typing import Any

from asya.names import resource_name
from asya_crew import sink, sump
from asya_crew.crew import CrewActor, CrewSettings
from asya_local.functions.lambda_shapes import LambdaContext, sqs_record

NS = "crew"
BUCKET = "results-bucket"


class Crew:
    def __init__(self, s3: Any, sqs: Any) -> None:
        self.s3 = s3
        self.sqs = sqs

    def run(self, actor: CrewActor, *bodies: Any, attributes: dict[str, str] | None = None) -> dict[str, Any]:
        records = []
        for body in bodies:
            record = sqs_record(
                resource_name(NS, actor.settings.actor), body if isinstance(body, str) else json.dumps(body)
            )
            record["attributes"].update(attributes or {})
            records.append(record)
        return actor.handle({"Records": records}, LambdaContext(actor.settings.actor))

    def kept(self) -> dict[str, dict[str, Any]]:
        listing = self.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
        return {o["Key"]: json.loads(self.s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()) for o in listing}

    def queue(self, actor: str) -> list[dict[str, Any]]:
        url = self.sqs.get_queue_url(QueueName=resource_name(NS, actor))["QueueUrl"]
        messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in messages]


def sink_actor(hooks: list[tuple[str, frozenset[str]]] | None = None) -> CrewActor:
    settings = CrewSettings.from_env("x-sink", {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET})
    return CrewActor(settings, sink.Sink(hooks or []).decide)


def sump_actor() -> CrewActor:
    return CrewActor(
        CrewSettings.from_env("x-sump", {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET}), sump.decide
    )
