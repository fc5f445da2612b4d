"""Large payloads travel in S3 (`asya.claims`): an output over the threshold leaves as a slim envelope
with a reference, the next actor's handler gets the real payload back, fan-out children each get
their own, x-sink keeps the real payload, and a reference that cannot be read goes to x-sump."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from asya.claims import REF_FIELD, Claims, PayloadUnreadableError
from asya_crew import sink
from asya_crew.crew import CrewActor, CrewSettings
from asya_local.functions.lambda_shapes import REGION, LambdaContext, sqs_record
from tests.support.mesh import NS, Mesh, envelope

BUCKET = "mesh-bucket"
THRESHOLD = 64 * 1024
CLAIMS = {"ASYA_CLAIM_BUCKET": BUCKET, "ASYA_CLAIM_CHECK_BYTES": str(THRESHOLD)}


@pytest.fixture(autouse=True)
def bucket(mesh: Mesh) -> None:
    """The mesh's bucket, beside the unit mesh's queues."""
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)


def objects() -> list[str]:
    listing = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return sorted(item["Key"] for item in listing)


def test_a_small_envelope_travels_as_it_is(mesh: Mesh) -> None:
    mesh.actor("echo", **CLAIMS)
    mesh.deliver(envelope({"n": 1}))
    assert mesh.only("b")["payload"] == {"n": 1}
    assert objects() == []


def test_a_large_output_travels_in_s3_and_the_next_handler_gets_it_back(mesh: Mesh) -> None:
    mesh.actor("huge", **CLAIMS)
    mesh.deliver(envelope({"size": 300_000}))
    [message] = mesh.messages("b")
    assert message["payload"] is None
    reference = message[REF_FIELD]
    assert reference["bytes"] == 300_000 + len('{"blob":""}')
    assert reference["uri"] == f"s3://{BUCKET}/claims/{NS}/{message['id']}/{reference['sha256']}.json"
    assert len(json.dumps(message)) < 2_000  # what SQS carries and bills: one 64 KB chunk

    mesh.actor("enrich", actor="b", **CLAIMS)  # the next actor's handler sees the real payload
    mesh.deliver(message, actor="b")
    [onward] = mesh.messages("x-sink")
    assert REF_FIELD in onward  # still large: in S3 again, under its new content
    restored = Claims(BUCKET, NS, THRESHOLD).restore(onward)
    assert restored["payload"]["blob"] == "x" * 300_000
    assert restored["payload"]["seen"] is True
    assert REF_FIELD not in restored
    assert len(objects()) == 2


def test_a_redelivered_hop_writes_the_same_object_again(mesh: Mesh) -> None:
    mesh.actor("huge", **CLAIMS)
    mesh.deliver(envelope({"size": 100_000}), message_ids=["m-1"])
    mesh.deliver(envelope({"size": 100_000}), message_ids=["m-2"])
    assert len(objects()) == 1  # named by content


def test_each_large_fan_out_output_travels_on_its_own(mesh: Mesh) -> None:
    mesh.actor("fan_out", **CLAIMS)
    items = ["a" * 70_000, "b" * 70_000, "c"]
    mesh.deliver(envelope({"items": items}))
    children = mesh.messages("b")
    assert len(children) == 3
    claims = Claims(BUCKET, NS, THRESHOLD)
    payloads = sorted(claims.restore(child)["payload"]["item"][:1] for child in children)
    assert payloads == ["a", "b", "c"]
    assert sum(REF_FIELD in child for child in children) == 2  # the small one travels as it is
    assert len(objects()) == 2


def test_a_reference_that_cannot_be_read_goes_to_x_sump(mesh: Mesh) -> None:
    mesh.actor("echo", **CLAIMS)
    gone = {"uri": f"s3://{BUCKET}/claims/{NS}/e1/{'0' * 64}.json", "bytes": 10, "sha256": "0" * 64}
    mesh.deliver({**envelope(None), REF_FIELD: gone})
    failure = mesh.only("x-sump")
    assert failure["status"]["reason"] == "PayloadUnreadable"
    assert "gone" in failure["status"]["error"]["message"]
    mesh.assert_empty("b")


def test_a_reference_outside_the_namespaces_claims_is_never_read(mesh: Mesh) -> None:
    boto3.client("s3", region_name=REGION).put_object(Bucket=BUCKET, Key="results/other/t/succeeded.json", Body=b"1")
    claims = Claims(BUCKET, NS, THRESHOLD)
    for uri in (f"s3://{BUCKET}/results/other/t/succeeded.json", f"s3://{BUCKET}/claims/{NS}/../x", "s3://other/k"):
        with pytest.raises(PayloadUnreadableError):
            claims.check_out({"uri": uri, "sha256": "x"})


def test_a_payload_that_does_not_match_its_digest_is_refused(mesh: Mesh) -> None:
    claims = Claims(BUCKET, NS, 1024)
    slim = json.loads(claims.check_in({"id": "e1", "payload": "x" * 2000}, json.dumps({"payload": "x" * 2000})))
    key = slim[REF_FIELD]["uri"].removeprefix(f"s3://{BUCKET}/")
    boto3.client("s3", region_name=REGION).put_object(Bucket=BUCKET, Key=key, Body=b'"tampered"')
    with pytest.raises(PayloadUnreadableError):
        claims.restore(slim)


def test_an_actor_without_a_claim_bucket_sends_a_referenced_envelope_to_x_sump(mesh: Mesh) -> None:
    mesh.actor("echo")
    reference = {"uri": f"s3://{BUCKET}/claims/{NS}/e1/x.json", "bytes": 1, "sha256": "x"}
    mesh.deliver({**envelope(None), REF_FIELD: reference})
    assert "ASYA_CLAIM_BUCKET" in mesh.only("x-sump")["status"]["error"]["message"]


def test_x_sink_keeps_the_real_payload(mesh: Mesh) -> None:
    claims = Claims(BUCKET, NS, 1024)
    ended = envelope({"blob": "z" * 5000}, curr="", next=())
    ended["status"] = {"phase": "succeeded", "actor": "a", "reason": "Completed"}
    body = claims.check_in(ended, json.dumps(ended))
    env = {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET, **CLAIMS}
    keeper = CrewActor(CrewSettings.from_env("x-sink", env), sink.Sink([]).decide)
    record = sqs_record(f"asya-{NS}-x-sink", body)
    assert keeper.handle({"Records": [record]}, LambdaContext("x-sink")) == {"batchItemFailures": []}
    kept = boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=f"results/{NS}/{ended['id']}/succeeded.json"
    )
    document: dict[str, Any] = json.loads(kept["Body"].read())
    assert document["payload"] == {"blob": "z" * 5000}
    assert REF_FIELD not in document


def test_the_gateway_sends_a_large_task_with_its_payload_in_s3(mesh: Mesh) -> None:
    from asya.task_store import TaskStore
    from asya_gateway.service import TaskService
    from asya_gateway.settings import GatewaySettings
    from asya_gateway.task_error import TaskError
    from asya_local.testing.tables import EVENTS, TASKS, create_tables

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_tables(dynamodb)
    settings = GatewaySettings(
        namespace=NS, tasks_table=TASKS, events_table=EVENTS, claim_bucket=BUCKET, claim_check_bytes=THRESHOLD
    )
    service = TaskService(settings, tasks=TaskStore(TASKS, client=dynamodb), sqs=mesh.sqs)
    created = service.create(payload={"image": "i" * 2_000_000}, route=["a", "b"])
    [message] = mesh.messages("a")
    assert message["id"] == created.task_id
    assert Claims(BUCKET, NS, THRESHOLD).restore(message)["payload"] == {"image": "i" * 2_000_000}
    with pytest.raises(TaskError) as refused:
        service.create(payload="x" * 7_000_000, route=["a"])
    assert refused.value.status == 413  # past what API Gateway and Lambda take in one request


def test_a_large_paused_envelope_is_resumed_with_its_payload_in_s3(mesh: Mesh) -> None:
    import datetime as dt

    from asya.task_store import TaskStore
    from asya_gateway.service import TaskService
    from asya_gateway.settings import GatewaySettings
    from asya_local.testing.tables import EVENTS, TASKS, create_tables

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_tables(dynamodb)
    mesh.sqs.create_queue(QueueName=f"asya-{NS}-x-resume")
    tasks = TaskStore(TASKS, client=dynamodb)
    tasks.create({"id": "t1"})
    tasks.pause("t1", {"prompt": "approve?"}, dt.datetime.now(dt.UTC))
    paused = envelope({"image": "i" * 2_000_000}, id="t1", curr="x-resume")  # as x-pause kept it: whole
    boto3.client("s3", region_name=REGION).put_object(
        Bucket=BUCKET, Key=f"results/{NS}/t1/pause.json", Body=json.dumps(paused).encode()
    )
    settings = GatewaySettings(
        namespace=NS, tasks_table=TASKS, events_table=EVENTS, results_bucket=BUCKET, claim_bucket=BUCKET
    )
    TaskService(settings, tasks=tasks, sqs=mesh.sqs).resume("t1", {"approved": True})
    [sent] = mesh.messages("x-resume")
    restored = Claims(BUCKET, NS, THRESHOLD).restore(sent)["payload"]
    assert restored == {"image": "i" * 2_000_000, "approved": True}
