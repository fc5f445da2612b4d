"""Hostile input at an actor's queue: every body of the corpus in `hostile.py` is processed or lands in
x-sump with its precise reason at the first delivery (never left for redelivery), and x-sump keeps what
it is sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya.reasons import Reason
from asya.results import result_key
from asya.sidecar import configure
from asya_crew import sink
from asya_crew.crew import CrewActor, CrewSettings
from asya_local.functions.lambda_shapes import REGION
from tests.support import hostile
from tests.support.crew import BUCKET, Crew, sump_actor
from tests.support.crew import NS as CREW_NS
from tests.support.mesh import NS, QUEUES, Mesh


@dataclass
class Stage:
    """One mesh for the whole corpus (moto, queues, the actor's sidecar and x-sump), built once: a
    fresh mesh per case would cost more than the cases themselves."""

    mesh: Mesh
    crew: Crew


@pytest.fixture(scope="module")
def stage() -> Iterator[Stage]:
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in {
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "t",
            "AWS_SECRET_ACCESS_KEY": "t",
        }.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        sqs = boto3.client("sqs")
        for name in QUEUES:
            sqs.create_queue(QueueName=f"asya-{NS}-{name}")
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        mesh = Mesh(sqs)
        mesh.actor("echo")
        yield Stage(mesh, Crew(s3, sqs))


def _queue_bodies(mesh: Mesh, actor: str) -> list[str]:
    url = mesh.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"]
    bodies: list[str] = []
    while batch := mesh.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            bodies.append(message["Body"])
            mesh.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


@pytest.mark.parametrize("case", hostile.CASES, ids=[case.name for case in hostile.CASES])
def test_a_hostile_body_is_settled_at_the_first_delivery(stage: Stage, case: hostile.Case) -> None:
    configure(stage.mesh.sidecar.config if stage.mesh.sidecar else None)
    response = stage.mesh.deliver(case.body, message_ids=["m-1"])
    assert response == {"batchItemFailures": []}, "the record must not be left for redelivery"
    landed = {actor: _queue_bodies(stage.mesh, actor) for actor in ("a", "b", "x-sink", "x-sump")}
    assert [actor for actor, bodies in landed.items() if bodies] == [case.lands]
    (body,) = landed[case.lands]
    document: dict[str, Any] = json.loads(body)
    if case.reason is None:
        assert document["route"]["curr"] == "b"
        return
    assert document["status"]["reason"] == case.reason
    if case.lands == "x-sump":
        assert document["payload"]["error"] == Reason(case.reason).code
        _kept_by_sump(stage, body, document)


def _kept_by_sump(stage: Stage, body: str, document: dict[str, Any]) -> None:
    """x-sump, given what the actor sent it, keeps it in S3 under the envelope's id with its reason."""
    assert stage.crew.run(sump_actor(), body) == {"batchItemFailures": []}
    key = result_key(CREW_NS, document["id"], "sump")
    kept = stage.crew.kept()
    assert list(kept) == [key]
    assert kept[key]["status"]["reason"] == document["status"]["reason"]
    stage.crew.s3.delete_object(Bucket=BUCKET, Key=key)


def test_x_sump_keeps_a_redriven_body_it_cannot_write_back_as_it_came(stage: Stage) -> None:
    """SQS redrive brings bodies no actor settled: one nested 600 deep parses but cannot be re-written,
    so x-sump keeps the body raw, at the first delivery."""
    body = hostile.with_payload_text(hostile.nested(600))
    assert stage.crew.run(sump_actor(), body) == {"batchItemFailures": []}
    key = result_key(CREW_NS, "env-h", "sump")
    assert stage.crew.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == body.encode()
    stage.crew.s3.delete_object(Bucket=BUCKET, Key=key)


def test_x_sink_passes_an_unwritable_invalid_body_to_x_sump(stage: Stage) -> None:
    body = hostile.with_payload_text(hostile.nested(600), id=5)
    sink_actor = CrewActor(
        CrewSettings.from_env("x-sink", {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET}), sink.Sink([]).decide
    )
    assert stage.crew.run(sink_actor, body) == {"batchItemFailures": []}
    (forwarded,) = _queue_bodies(stage.mesh, "x-sump")
    document = json.loads(forwarded)
    assert document["status"]["reason"] == "InvalidEnvelope"
    assert document["payload"]["original_payload"]["unwritable"] is True
    for listed in stage.crew.s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        stage.crew.s3.delete_object(Bucket=BUCKET, Key=listed["Key"])
