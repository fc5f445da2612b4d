"""A task's input is kept by the write that creates its record (inline when small, by the claim check's
link when not), shown in its view, and an ended task runs again with it or with an input given anew."""

from __future__ import annotations

from typing import Any

import boto3
import orjson
import pytest

from asya.claims import REF_FIELD, Claims
from asya.task_store import TaskStore
from asya_gateway.function import GatewayFunction
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_gateway.task_error import TaskError
from asya_gateway.task_input import INPUT_INLINE_BYTES
from asya_local.functions.lambda_shapes import REGION
from asya_local.testing.tables import EVENTS, TASKS, create_tables
from tests.support.mesh import NS, Mesh

BUCKET = "mesh-bucket"
THRESHOLD = 64 * 1024
SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


@pytest.fixture
def service(mesh: Mesh) -> TaskService:
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_tables(dynamodb)
    settings = GatewaySettings(
        namespace=NS,
        tasks_table=TASKS,
        events_table=EVENTS,
        results_bucket=BUCKET,
        claim_bucket=BUCKET,
        claim_check_bytes=THRESHOLD,
        flows={"count": Flow(name="count", route=["a", "b"], input_schema=SCHEMA, timeout=60)},
    )
    return TaskService(settings, tasks=TaskStore(TASKS, client=dynamodb), sqs=mesh.sqs)


def record(service: TaskService, task_id: str) -> dict[str, object]:
    found = service.tasks.get(task_id)
    assert found is not None
    return found


def end(service: TaskService, task_id: str, status: str = "failed") -> None:
    service.post_event(task_id, {"type": "status", "status": status, "error": {"message": "boom"}})


def test_a_small_input_is_kept_in_the_record_and_shown(service: TaskService, mesh: Mesh) -> None:
    created = service.create(payload={"n": 1, "text": "é"}, flow="count")
    assert record(service, created.task_id)["input"] == '{"n":1,"text":"é"}'
    assert created.task is not None
    assert created.task["input"] == {"n": 1, "text": "é"}
    assert service.view(created.task_id)["input"] == {"n": 1, "text": "é"}
    assert mesh.only("a")["payload"] == {"n": 1, "text": "é"}  # it travels as it did


def test_an_input_over_the_bound_travels_by_claim_check_and_the_record_keeps_the_link(
    service: TaskService, mesh: Mesh
) -> None:
    payload = {"n": 2, "text": "x" * INPUT_INLINE_BYTES}  # over the record's bound, under the mesh's threshold
    created = service.create(payload=payload, flow="count")
    kept = record(service, created.task_id)
    assert "input" not in kept
    [sent] = mesh.messages("a")
    assert sent["payload"] is None
    assert sent[REF_FIELD] == kept["input_ref"]
    assert Claims(BUCKET, NS, THRESHOLD).restore(sent)["payload"] == payload
    assert service.view(created.task_id)["input"] == payload
    assert "input_ref" not in service.view(created.task_id)
    end(service, created.task_id)
    assert service.wait(created.task_id, 1)[1]["input_ref"] == kept["input_ref"]  # beside the output: the link


def test_an_input_already_over_the_claim_check_threshold_is_written_once(service: TaskService, mesh: Mesh) -> None:
    payload = {"n": 3, "blob": "b" * (THRESHOLD + 10)}
    created = service.create(payload=payload, flow="count")
    [sent] = mesh.messages("a")
    assert record(service, created.task_id)["input_ref"] == sent[REF_FIELD]
    listing = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=BUCKET)["Contents"]
    assert len(listing) == 1
    assert service.view(created.task_id)["input"] == payload


def test_the_bound_keeps_a_record_with_its_input_within_two_write_units(service: TaskService) -> None:
    """An input at the bound makes the record, as created, at most 2 KB: each later write pays at most
    one write unit more for it."""
    payload = "y" * (INPUT_INLINE_BYTES - 2)  # a JSON string of exactly the bound
    created = service.create(payload=payload, route=["a", "b", "c"], timeout=30)
    item = service.tasks.client.get_item(TableName=TASKS, Key={"id": {"S": created.task_id}})["Item"]
    size = sum(len(name) + len(orjson.dumps(value)) for name, value in item.items())
    assert "input" in item
    assert size < 2048


def test_an_ended_task_runs_again_with_its_input_and_names_the_task_it_reruns(service: TaskService, mesh: Mesh) -> None:
    first = service.create(payload={"n": 4}, flow="count")
    end(service, first.task_id)
    again = service.rerun(first.task_id)
    assert again.task is not None
    assert again.task["rerun_of"] == first.task_id
    assert again.task["flow"] == "count"
    assert again.task["input"] == {"n": 4}
    assert again.task["deadline_at"]  # the flow's timeout, as the first had
    assert [m["payload"] for m in mesh.messages("a")] == [{"n": 4}, {"n": 4}]


def test_a_rerun_takes_an_edited_input_checked_against_the_flows_schema(service: TaskService) -> None:
    first = service.create(payload={"n": 5}, flow="count")
    end(service, first.task_id, "canceled")
    edited = service.rerun(first.task_id, {"n": 6})
    assert edited.task is not None
    assert edited.task["input"] == {"n": 6}
    with pytest.raises(TaskError) as refused:
        service.rerun(first.task_id, {"n": "six"})
    assert refused.value.status == 400
    assert "input schema" in str(refused.value)


def test_a_task_started_by_route_runs_again_on_that_route(service: TaskService, mesh: Mesh) -> None:
    payload = {"blob": "z" * 5000}
    first = service.create(payload=payload, route=["b", "c"])
    end(service, first.task_id, "succeeded")
    again = service.rerun(first.task_id)
    assert again.task is not None
    assert again.task["route"] == {"prev": [], "curr": "b", "next": ["c"]}
    [_, sent] = mesh.messages("b")
    assert Claims(BUCKET, NS, THRESHOLD).restore(sent)["payload"] == payload


def test_what_cannot_run_again_says_why(service: TaskService) -> None:
    running = service.create(payload={"n": 7}, flow="count")
    with pytest.raises(TaskError) as refused:
        service.rerun(running.task_id)
    assert refused.value.status == 409
    assert "only a task that has ended" in str(refused.value)

    service.tasks.create({"id": "old", "flow": "count"})  # as a record from before inputs were kept
    end(service, "old")
    assert "started before the gateway kept inputs" in service.view("old")["input_missing"]
    with pytest.raises(TaskError) as refused:
        service.rerun("old")
    assert refused.value.status == 409
    assert "was not kept" in str(refused.value)
    assert service.rerun("old", {"n": 8}).task is not None  # a new input still runs it

    service.tasks.create({"id": "branch", "parent_id": "old", "root_id": "old"})
    end(service, "branch")
    with pytest.raises(TaskError) as refused:
        service.rerun("branch", {"n": 9})
    assert "branch of task old" in str(refused.value)
    with pytest.raises(TaskError) as refused:
        service.rerun("nothing")
    assert refused.value.status == 404


def test_the_api_runs_an_ended_task_again(service: TaskService, monkeypatch: pytest.MonkeyPatch) -> None:
    from asya_gateway import api
    from asya_local.functions.lambda_shapes import LambdaContext
    from asya_local.functions.rest_proxy import HttpRequest, http_response, proxy_event
    from tests.support.gateway_unit import OPERATOR_KEY, UNIT_ENVIRONMENT, serve

    for name, value in UNIT_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    serve(monkeypatch, lambda: GatewayFunction(service))

    def post(path: str, body: bytes | None) -> tuple[int, dict[str, Any]]:
        headers = [OPERATOR_KEY, *([("content-type", "application/json")] if body is not None else [])]
        request = HttpRequest("POST", f"/api/v1/mesh/{path}", headers, body or b"")
        event = proxy_event(request, "unit")
        answered = http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))
        return answered.status, orjson.loads(answered.body)

    first = service.create(payload={"n": 1}, flow="count")
    status, refused = post(f"{first.task_id}/rerun", b"{}")
    assert status == 409
    assert "only a task that has ended" in str(refused["message"])
    end(service, first.task_id)
    for body, expected in ((b"{}", {"n": 1}), (None, {"n": 1}), (b'{"payload": {"n": 2}}', {"n": 2})):
        status, again = post(f"{first.task_id}/rerun", body)
        assert status == 201, again
        assert again["task"]["input"] == expected
        assert again["task"]["rerun_of"] == first.task_id
        assert str(again["status_url"]).endswith(str(again["id"]))
    status, refused = post(f"{first.task_id}/rerun", b'{"payload": {"n": 1}, "flow": "other"}')
    assert status == 422


def test_asya_status_shows_the_input_trimmed_and_the_task_it_reruns() -> None:
    from rich.console import Console

    from asya_local.task_text import task_table

    def shown(task: dict[str, Any]) -> str:
        console = Console(width=400, record=True)
        console.print(task_table({"id": "t2", "status": "failed", **task}))
        return console.export_text()

    small = shown({"input": {"n": 1}, "rerun_of": "t1"})
    assert '│ input    │ {"n": 1}' in small
    assert "│ rerun of │ t1" in small
    large = shown({"input": {"text": "é" * 500}})
    assert '{"text": "' + "é" * 190 + "… (1012 bytes)" in large
    assert "é" * 191 not in large
    assert "too large to show here: https://s3/x" in shown({"input_url": "https://s3/x"})
    assert "kept at s3://b/claims/n/t2/d.json" in shown({"input_ref": {"uri": "s3://b/claims/n/t2/d.json"}})


def test_status_events_leave_the_input_out(service: TaskService) -> None:
    """It never changes, and it would make each event of a watched task cost a second write unit."""
    from asya_gateway.stream import status_changes

    created = service.create(payload={"n": 1, "text": "t" * 900}, flow="count")
    image = service.tasks.client.get_item(TableName=TASKS, Key={"id": {"S": created.task_id}})["Item"]
    [change] = status_changes([{"eventName": "INSERT", "dynamodb": {"NewImage": image, "SequenceNumber": "1"}}])
    _, kind, event = change.event
    assert kind == "status"
    assert event["status"] == "pending"
    assert "input" not in event
    assert len(orjson.dumps(event)) < 1024


def test_a_rerun_sent_twice_with_its_key_starts_one_task(service: TaskService, mesh: Mesh) -> None:
    first = service.create(payload={"n": 1}, flow="count")
    end(service, first.task_id)
    once = service.rerun(first.task_id, idempotency_key="click-1")
    twice = service.rerun(first.task_id, idempotency_key="click-1")
    assert twice.replayed
    assert twice.task_id == once.task_id
    # a replay sends a task not picked up yet again, as any create's does: still one task, one record
    assert {message["id"] for message in mesh.messages("a")} == {first.task_id, once.task_id}
    with pytest.raises(TaskError) as refused:
        service.rerun(first.task_id, {"n": 2}, idempotency_key="click-1")
    assert refused.value.status == 422
