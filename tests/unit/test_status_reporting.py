"""The sidecar reports every hop to the task table (docs/status.md): one write per hop by default, three when
asked, none in stealth mode; canceled and paused tasks stop at the pre-flight check; fan-out branches
are registered on the root before they are sent; FLY events reach the live log, not the status."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import boto3
import pytest
from botocore.client import BaseClient

from asya.fans import BUCKET_BRANCHES, INLINE_BRANCHES
from asya.headers import FAN_HEADER
from asya.live import EventLog
from asya.sidecar import configure
from asya.task_store import TaskStore
from asya.telemetry import Telemetry
from asya.transport import OutgoingMessage, SqsTransport
from asya_local.testing.tables import EVENTS, TASKS, create_idempotency_table, create_tables
from tests.support.mesh import Mesh, envelope

STATUS_ENV = {"ASYA_TASKS_TABLE": TASKS, "ASYA_EVENTS_TABLE": EVENTS}
IDEMPOTENCY = "asya-unit-hops"
IDEMPOTENCY_ENV = {**STATUS_ENV, "ASYA_IDEMPOTENCY_TABLE": IDEMPOTENCY}


@pytest.fixture
def tasks(mesh: Mesh) -> TaskStore:
    client = boto3.client("dynamodb")
    create_tables(client)
    create_idempotency_table(client, IDEMPOTENCY)
    return TaskStore(TASKS, client=client)


class CountingStore:
    """Counts the requests the sidecar makes to DynamoDB, by operation."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: Counter[str] = Counter()
        original = getattr(BaseClient, "_make_api_call")  # noqa: B009 - private, and untyped in the stubs

        def counted(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
            if client.meta.service_model.service_name == "dynamodb":
                self.calls[operation] += 1
            return original(client, operation, params)

        monkeypatch.setattr(BaseClient, "_make_api_call", counted)

    @property
    def writes(self) -> int:
        return sum(n for operation, n in self.calls.items() if operation in WRITES)


WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def test_a_hop_claims_itself_and_reports_where_the_task_is_in_one_write(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Duplicate suppression on too: the claim rides in the status write, nothing goes to the
    idempotency table."""
    tasks.create({"id": "env-1"})
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", **IDEMPOTENCY_ENV)
    mesh.deliver(envelope(next=("b", "c")))
    task = tasks.get("env-1")
    assert task is not None
    assert (task["status"], task["actor"], task["phase"], task["progress"]) == ("running", "a", "processing", 0)
    assert counter.writes == 1
    assert mesh.only("b")["route"]["curr"] == "b"
    mesh.actor("enrich", actor="b", **IDEMPOTENCY_ENV)
    mesh.deliver(envelope(route={"prev": ["a"], "curr": "b", "next": ["c"]}), actor="b")
    task = tasks.get("env-1")
    assert task is not None
    assert (task["actor"], task["progress"]) == ("b", pytest.approx(33.33))
    assert counter.writes == 2


def test_every_point_setting_writes_received_processing_and_running_at_the_next_actor(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", ASYA_STATUS_WRITES="every-point", **STATUS_ENV)
    mesh.deliver(envelope())
    assert counter.writes == 3
    task = tasks.get("env-1")
    assert task is not None
    assert task["actor"] == "b"


def test_the_last_actor_writes_only_its_claim_and_leaves_the_final_write_to_x_sink(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", **STATUS_ENV)
    mesh.deliver(envelope(next=()))
    assert counter.writes == 1
    assert mesh.only("x-sink")["status"]["phase"] == "succeeded"


def test_a_redelivery_while_the_hop_is_held_goes_back_and_one_after_the_task_moved_on_is_dropped(
    mesh: Mesh, tasks: TaskStore
) -> None:
    tasks.create({"id": "env-1"})
    mesh.actor("enrich", **IDEMPOTENCY_ENV)
    mesh.deliver(envelope(), message_ids=["m1"])
    assert len(mesh.messages("b")) == 1
    again = mesh.deliver(envelope(), message_ids=["m2"])  # the first delivery's invocation may still run
    assert again["batchItemFailures"] == [{"itemIdentifier": "m2"}]
    mesh.actor("enrich", actor="b", **IDEMPOTENCY_ENV)
    mesh.deliver(envelope(route={"prev": ["a"], "curr": "b", "next": []}), actor="b")  # b's claim: a's hop is done
    mesh.actor("enrich", **IDEMPOTENCY_ENV)
    late = mesh.deliver(envelope(), message_ids=["m3"])
    assert late["batchItemFailures"] == []
    mesh.assert_empty("b")  # dropped, not run again


def test_a_stealth_envelope_is_claimed_in_the_idempotency_table(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", **IDEMPOTENCY_ENV)
    stealth = envelope(headers={"x-asya-mesh-status": "off"})
    mesh.deliver(stealth)
    mesh.deliver(stealth)
    assert len(mesh.messages("b")) == 1
    assert (counter.calls["PutItem"], counter.calls["UpdateItem"]) == (2, 1)  # two claims, one settled
    assert tasks.get("env-1") is None


def test_canceled_task_stops_before_the_handler(mesh: Mesh, tasks: TaskStore) -> None:
    tasks.create({"id": "env-1"})
    tasks.cancel("env-1")
    mesh.actor("explode", **STATUS_ENV)  # would fail if it ran
    mesh.deliver(envelope())
    halted = mesh.only("x-sink")
    assert (halted["status"]["phase"], halted["status"]["reason"]) == ("canceled", "Canceled")
    assert halted["route"]["curr"] == "a"
    mesh.assert_empty("b", "x-sump")


def test_branch_of_a_canceled_root_stops_too(mesh: Mesh, tasks: TaskStore) -> None:
    tasks.create({"id": "root"})
    tasks.cancel("root")
    mesh.actor("enrich", **STATUS_ENV)
    mesh.deliver(envelope(id="child", parent_id="root", headers={"x-asya-root-id": "root"}))
    assert mesh.only("x-sink")["status"]["phase"] == "canceled"


def test_a_hop_without_branches_reads_nothing_before_its_claim_and_a_branch_reads_its_root(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim checks the task's own status (a canceled one is stopped by it, above); only a branch's
    root is read first: one call fewer on a plain hop's way."""
    tasks.create({"id": "env-1"})
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", **STATUS_ENV)
    mesh.deliver(envelope())
    assert (counter.calls["BatchGetItem"], counter.calls["UpdateItem"]) == (0, 1)
    mesh.deliver(envelope(id="child", parent_id="env-1", headers={"x-asya-root-id": "env-1"}))
    assert counter.calls["BatchGetItem"] == 1


def test_paused_task_goes_to_x_sink_as_paused(mesh: Mesh, tasks: TaskStore) -> None:
    import datetime as dt

    tasks.create({"id": "env-1"})
    tasks.pause("env-1", {"prompt": "?"}, dt.datetime.now(dt.UTC))
    mesh.actor("enrich", **STATUS_ENV)
    mesh.deliver(envelope())
    assert mesh.only("x-sink")["status"]["phase"] == "paused"


def test_stealth_mode_neither_reports_nor_checks(mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks.create({"id": "env-1"})
    tasks.cancel("env-1")
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", **STATUS_ENV)
    mesh.deliver(envelope(headers={"x-asya-mesh-status": "off"}))
    assert mesh.only("b")["payload"]["seen"] is True  # not stopped: no pre-flight check
    assert counter.writes == 0


def test_fan_out_registers_branches_on_the_root_before_sending(mesh: Mesh, tasks: TaskStore) -> None:
    tasks.create({"id": "env-1"})
    mesh.actor("fan_out", **STATUS_ENV)
    mesh.deliver(envelope({"items": [1, 2, 3]}))
    sent = mesh.messages("b")
    children = [body for body in sent if body["id"] != "env-1"]
    assert len(children) == 2
    assert all(body["headers"]["x-asya-root-id"] == "env-1" for body in sent)  # the root's own output too
    root = tasks.get("env-1")
    assert root is not None
    assert root["branch_ids"] == {child["id"] for child in children}
    assert tasks.get(children[0]["id"]) is None  # a branch's record starts with its first hop's claim
    mesh.actor("enrich", actor="b", **STATUS_ENV)
    mesh.deliver(children[0], actor="b")
    child = tasks.get(children[0]["id"])
    assert child is not None
    assert (child["status"], child["parent_id"], child["root_id"]) == ("running", "env-1", "env-1")


def test_a_fan_out_wider_than_the_root_keeps_names_each_branchs_bucket(mesh: Mesh, tasks: TaskStore) -> None:
    """60 branches do not fit the root's 50: they are registered in buckets of 50 and 10, and each
    branch's envelope names its bucket; the root's own does not. A bucketed branch that fans out
    keeps its bucket, and its own branches, which the root has room for, name none."""
    tasks.create({"id": "env-1"})
    mesh.actor("fan_out", **STATUS_ENV)
    mesh.deliver(envelope({"items": list(range(INLINE_BRANCHES + 11))}))
    sent = mesh.messages("b")
    [own] = [body for body in sent if body["id"] == "env-1"]
    children = [body for body in sent if body["id"] != "env-1"]
    assert FAN_HEADER not in own["headers"]
    buckets = Counter(child["headers"][FAN_HEADER] for child in children)
    assert sorted(buckets.values()) == [10, BUCKET_BRANCHES]
    assert set(buckets) <= {child["id"] for child in children}  # named by its first branch
    root = tasks.get("env-1")
    assert root is not None
    assert ("branch_ids" not in root, root["fans"]["branches"], root["fans"]["open"]) == (True, 60, 2)
    branch = {**children[0], "payload": {"items": [1, 2]}}
    mesh.actor("fan_out", actor="b", **STATUS_ENV)
    mesh.deliver(branch, actor="b")
    [went_on, nested] = sorted(mesh.messages("x-sink"), key=lambda body: body["id"] != branch["id"])
    assert went_on["headers"][FAN_HEADER] == branch["headers"][FAN_HEADER]
    assert FAN_HEADER not in nested["headers"]
    record = tasks.get(branch["id"])
    assert record is not None
    assert record["fan_bucket"] == branch["headers"][FAN_HEADER]
    root = tasks.get("env-1")
    assert root is not None
    assert root["branch_ids"] == {nested["id"]}


def test_fly_events_reach_the_live_log_not_the_status(mesh: Mesh, tasks: TaskStore) -> None:
    tasks.create({"id": "env-1"})
    mesh.actor("verbs", **STATUS_ENV)
    mesh.deliver(envelope())
    events = EventLog(EVENTS).after("env-1", None, now_ns=time.time_ns() + 10**10)  # once settled
    assert [(event.kind, event.data["data"]) for event in events] == [("fly", {"token": "partial"})]
    task = tasks.get("env-1")
    assert task is not None
    assert "token" not in str(task)


class BranchesRefused(SqsTransport):
    """SQS that refuses every envelope but the root's own (`env-1`): a fan-out whose branches did not go."""

    def send(self, queue: str, messages: Sequence[OutgoingMessage]) -> set[str]:
        refused = {m.entry_id for m in messages if json.loads(m.body)["id"] != "env-1"}
        return refused | super().send(queue, [m for m in messages if m.entry_id not in refused])


def test_a_fan_out_whose_branches_were_not_sent_runs_again_and_loses_none(mesh: Mesh, tasks: TaskStore) -> None:
    """The root's own output is what marks the hop done (the next hop's claim), so it goes only once
    every branch went. Sent first, it would move the task on, the record's redelivery would be
    dropped as a hop already passed, and the branches (registered on the root) would never be sent:
    the root would wait for them forever."""
    tasks.create({"id": "env-1"})
    sidecar = mesh.actor("fan_out", **STATUS_ENV)
    configure(sidecar.config, BranchesRefused())
    fan_out = envelope({"items": [1, 2, 3]})
    assert mesh.deliver(fan_out, message_ids=["m1"])["batchItemFailures"] == [{"itemIdentifier": "m1"}]
    arrived = mesh.messages("b")
    mesh.actor("enrich", actor="b", **STATUS_ENV)
    for body in arrived:  # whatever did go runs on, as it would on AWS
        mesh.deliver(body, actor="b")
    tasks.client.update_item(  # the first delivery's invocation ended: its hold lapses
        TableName=TASKS,
        Key={"id": {"S": "env-1"}},
        UpdateExpression="SET hop_held_until = :zero",
        ExpressionAttributeValues={":zero": {"N": "0"}},
    )
    mesh.actor("fan_out", **STATUS_ENV)
    assert mesh.deliver(fan_out, message_ids=["m1"])["batchItemFailures"] == []
    arrived += mesh.messages("b")
    root = tasks.get("env-1")
    assert root is not None
    assert root["branch_ids"] <= {body["id"] for body in arrived}, "every registered branch was sent"
    assert len(root["branch_ids"]) == 2


def test_each_hop_is_kept_with_its_time_in_the_same_write(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console shows a task's hops with their times: each claim appends its hop, in its one write."""
    from asya.task_record import hop_times

    tasks.create({"id": "env-1"})
    counter = CountingStore(monkeypatch)
    mesh.actor("enrich", **STATUS_ENV)
    mesh.deliver(envelope(next=("b",)))
    time.sleep(0.05)
    mesh.actor("enrich", actor="b", **STATUS_ENV)
    mesh.deliver(mesh.only("b"), actor="b")
    assert counter.writes == 2, "still one write per hop"
    running = hop_times(tasks.get("env-1") or {})
    assert [(hop["actor"], hop["attempt"]) for hop in running] == [("a", 1), ("b", 1)]
    assert running[0]["seconds"] >= 0.05
    assert running[1]["seconds"] is None, "b's hop is the last: it runs until the task ends"
    tasks.finish("env-1", "env-1", "succeeded", {"route": mesh.only("x-sink")["route"]})
    ended = hop_times(tasks.get("env-1") or {})
    assert ended[1]["seconds"] is not None
    assert ended[0]["started_at"].endswith("Z")


def test_a_record_whose_hop_raises_goes_back_to_its_queue_and_the_log_says_why(
    mesh: Mesh, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hop that cannot even be planned (its claim could not be written) is a batch item failure, so
    SQS delivers it again; its neighbours in the batch go on, and the function's log names the record
    and the error, where Powertools' batch processor said nothing above DEBUG."""
    sidecar = mesh.actor("enrich", **STATUS_ENV)
    planned = sidecar.hops.run

    def failing(message_id: str, *args: Any, **kwargs: Any) -> Any:
        if message_id == "m1":
            raise RuntimeError("the task table refused the claim")
        return planned(message_id, *args, **kwargs)

    monkeypatch.setattr(sidecar.hops, "run", failing)
    logged: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(Telemetry, "log_failure", lambda _, message, **fields: logged.append((message, fields)))
    answer = mesh.deliver(envelope(), envelope(id="env-2"), message_ids=["m1", "m2"])
    assert answer["batchItemFailures"] == [{"itemIdentifier": "m1"}]
    assert [message["id"] for message in mesh.messages("b")] == ["env-2"]
    [fields] = [fields for message, fields in logged if "could not be planned" in message]
    assert (fields["message_id"], fields["error_type"]) == ("m1", "RuntimeError")
    assert "refused the claim" in fields["error_message"]
