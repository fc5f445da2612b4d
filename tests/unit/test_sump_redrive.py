"""x-sump inspect and redrive: x-sump lists each arrival once, the gateway lists, shows and redrives
them, a redriven envelope starts afresh where it failed (or where the caller says) and its task goes
from failed back to running and on to its new ending; a fan-out root waits for the redriven branch."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya.dedup import Hop
from asya.envelope import parse_envelope
from asya.headers import REDRIVE_HEADER
from asya.routing import child_id
from asya.sump import SumpIndex
from asya.task_store import TaskStore
from asya_crew import sink, sump
from asya_crew.crew import CrewActor, CrewSettings
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.sump import Sump
from asya_gateway.task_error import TaskError
from asya_local.functions.lambda_shapes import REGION, LambdaContext, sqs_record
from asya_local.testing.tables import EVENTS, SUMP, TASKS, create_tables

NS = "rd"
BUCKET = "results"
CREW_ENV = {
    "ASYA_NAMESPACE": NS,
    "ASYA_RESULTS_BUCKET": BUCKET,
    "ASYA_TASKS_TABLE": TASKS,
    "ASYA_RESULTS_INLINE_MAX_BYTES": "4096",
}


class World:
    """The crew's x-sink and x-sump, the gateway's x-sump service, and the queues, in moto."""

    def __init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.s3 = boto3.client("s3", region_name=REGION)
        self.s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_tables(dynamodb)
        for actor in ("a", "b", "fixer", "x-sink", "x-sump"):
            self.sqs.create_queue(QueueName=f"asya-{NS}-{actor}")
        self.tasks = TaskStore(TASKS, client=dynamodb)
        self.index = SumpIndex(SUMP, client=dynamodb)
        settings = GatewaySettings(
            namespace=NS, tasks_table=TASKS, events_table=EVENTS, results_bucket=BUCKET, sump_table=SUMP
        )
        self.service = TaskService(settings, tasks=self.tasks, sqs=self.sqs, s3=self.s3)
        self.sump = Sump(self.service, self.index)
        self.x_sink = CrewActor(CrewSettings.from_env("x-sink", CREW_ENV), sink.Sink([]).decide)
        self.x_sump = CrewActor(CrewSettings.from_env("x-sump", {**CREW_ENV, "ASYA_SUMP_TABLE": SUMP}), sump.decide)

    def run(self, crew: CrewActor, body: Any, attributes: dict[str, str] | None = None) -> None:
        record = sqs_record(f"asya-{NS}-{crew.settings.actor}", body if isinstance(body, str) else json.dumps(body))
        record["attributes"].update(attributes or {})
        answer = crew.handle({"Records": [record]}, LambdaContext(crew.settings.actor))
        assert answer == {"batchItemFailures": []}

    def queue(self, actor: str) -> list[dict[str, Any]]:
        url = self.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"]
        messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        for message in messages:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return [json.loads(message["Body"]) for message in messages]

    def fail(
        self,
        envelope_id: str,
        *,
        headers: dict[str, Any] | None = None,
        payload: Any = None,
        reason: str = "HandlerError",
    ) -> None:
        """A handler at `b` raised (or, by `reason`, the envelope failed there otherwise): x-sink records
        the failure and forwards it, x-sump keeps it."""
        failed = {
            "id": envelope_id,
            "route": {"prev": ["a"], "curr": "b", "next": ["c"]},
            "headers": {"trace": "t1", "x-asya-first-attempt": "2026-01-01T00:00:00Z", **(headers or {})},
            "status": {
                "phase": "failed",
                "actor": "b",
                "attempt": 3,
                "reason": reason,
                "error": {"type": "ValueError", "message": "boom"},
                "deadline_at": "2026-01-01T00:05:00Z",
            },
            "payload": {"error": "handler_error", "details": {}, "original_payload": payload or {"n": 1}},
        }
        self.run(self.x_sink, failed)
        forwarded = self.queue("x-sump")
        assert len(forwarded) == 1
        self.run(self.x_sump, forwarded[0])

    def succeed(self, envelope: dict[str, Any]) -> None:
        """The redriven envelope made it to the end of its route."""
        ended = {**envelope, "route": {"prev": ["a", "b", "c"], "curr": "", "next": []}}
        ended["status"] = {**envelope["status"], "phase": "succeeded", "actor": "c", "reason": "Completed"}
        ended["payload"] = {"done": True}
        self.run(self.x_sink, ended)


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        yield World()


def test_x_sump_lists_each_arrival_once(world: World) -> None:
    world.tasks.create({"id": "t1"})
    world.fail("t1")
    entry = world.index.latest("t1")
    assert entry is not None
    assert (entry["reason"], entry["actor"], entry["at"], entry["task_id"]) == ("HandlerError", "b", "b", "t1")
    assert (entry["error_type"], entry["message"], entry["redrives"]) == ("ValueError", "boom", 0)
    assert entry["key"] == f"results/{NS}/t1/sump.json"
    kept = world.s3.get_object(Bucket=BUCKET, Key=entry["key"])["Body"].read()
    world.run(world.x_sump, json.loads(kept))  # a redelivery
    assert world.sump.list(reason=None, actor=None, since=None, limit=10, cursor=None)["entries"] == [entry]


def test_the_listing_filters_and_pages(world: World) -> None:
    for number in range(5):
        world.fail(f"t{number}")
    world.run(world.x_sump, {"id": "r1", "route": {"prev": [], "curr": "a", "next": []}, "payload": {}})
    listed = world.sump.list(reason="HandlerError", actor="b", since=None, limit=10, cursor=None)
    assert sorted(entry["id"] for entry in listed["entries"]) == [f"t{n}" for n in range(5)]
    assert [
        e["id"] for e in world.sump.list(reason="Redriven", actor=None, since=None, limit=10, cursor=None)["entries"]
    ] == ["r1"]
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)).isoformat()
    assert world.sump.list(reason=None, actor=None, since=later, limit=10, cursor=None)["entries"] == []
    seen: list[str] = []
    cursor = None
    while True:
        page = world.sump.list(reason=None, actor=None, since=None, limit=2, cursor=cursor)
        assert len(page["entries"]) <= 2
        seen += [entry["id"] for entry in page["entries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == ["r1", *(f"t{n}" for n in range(5))]
    with pytest.raises(TaskError) as refused:
        world.sump.list(reason=None, actor=None, since="yesterday", limit=2, cursor=None)
    assert refused.value.status == 400


def test_a_redrive_restarts_the_envelope_where_it_failed_and_the_task_runs_again(world: World) -> None:
    world.tasks.create({"id": "t1", "route": {"prev": [], "curr": "a", "next": ["b", "c"]}})
    world.fail("t1", payload={"n": 7})
    assert world.tasks.get("t1")["status"] == "failed"  # type: ignore[index]
    redriven, answer = world.sump.redrive("t1")
    assert redriven
    assert (answer["to"], answer["redrives"], answer["task"]["status"]) == ("b", 1, "running")
    [sent] = world.queue("b")
    assert sent["route"] == {"prev": ["a"], "curr": "b", "next": ["c"]}
    assert sent["payload"] == {"n": 7}  # what the failing actor was given
    assert sent["headers"] == {"trace": "t1", REDRIVE_HEADER: 1}  # a fresh max_duration clock
    assert {key: sent["status"][key] for key in ("phase", "actor", "attempt")} == {
        "phase": "pending",
        "actor": "b",
        "attempt": 1,
    }
    assert "deadline_at" not in sent["status"]
    parse_envelope(json.dumps(sent))  # an actor takes it
    task = world.tasks.get("t1")
    assert task is not None
    assert (task["status"], task["redrives"], task["actor"]) == ("running", 1, "b")
    assert not {"reason", "error", "output", "expires_at", "deadline_at", "hop_position"} & set(task)
    assert world.index.latest("t1")["redriven_to"] == "b"  # type: ignore[index]

    again, repeated = world.sump.redrive("t1")  # idempotent: nothing is sent twice
    assert not again
    assert repeated["entry"]["redriven_to"] == "b"
    assert world.queue("b") == []

    world.succeed(sent)
    ended = world.tasks.get("t1")
    assert ended is not None
    assert (ended["status"], ended["output"]) == ("succeeded", '{"done":true}')


def test_a_redriven_timeout_runs_to_its_end_without_the_deadline_that_had_passed(world: World) -> None:
    """The review's case #27, as docs/status.md says it: a task whose deadline passed is redriven, and
    neither the sidecar's deadline check nor the backstop fails it again; it has no deadline since."""
    passed = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).isoformat()
    world.tasks.create({"id": "t1", "route": {"prev": [], "curr": "a", "next": ["b", "c"]}, "deadline_at": passed})
    world.fail("t1", reason="Timeout")
    world.sump.redrive("t1")
    [sent] = world.queue("b")
    assert "deadline_at" not in parse_envelope(json.dumps(sent)).status_wire()
    assert world.tasks.expire(dt.datetime.now(dt.UTC)) == []
    assert "deadline_at" not in (world.tasks.get("t1") or {}), "asya status shows none"
    world.succeed(sent)
    assert (world.tasks.get("t1") or {})["status"] == "succeeded"


def test_a_redriven_envelope_that_fails_again_is_kept_again_and_can_be_redriven_again(world: World) -> None:
    world.tasks.create({"id": "t1"})
    world.fail("t1")
    world.sump.redrive("t1")
    [sent] = world.queue("b")
    world.fail("t1", headers={REDRIVE_HEADER: 1})  # the same failure, in the redriven run
    assert world.tasks.get("t1")["status"] == "failed"  # type: ignore[index]
    second = world.index.latest("t1")
    assert second is not None
    assert (second["redrives"], second["key"]) == (1, f"results/{NS}/t1/sump.redrive-1.json")
    first = world.sump.list(reason=None, actor=None, since=None, limit=10, cursor=None)["entries"]
    assert sorted((entry["redrives"], "redriven_at" in entry) for entry in first) == [(0, True), (1, False)]
    redriven, answer = world.sump.redrive("t1", to="fixer", payload={"n": 8})
    assert redriven
    assert answer["redrives"] == 2
    [again] = world.queue("fixer")
    assert (again["headers"][REDRIVE_HEADER], again["payload"], again["route"]["curr"]) == (2, {"n": 8}, "fixer")
    assert sent["headers"][REDRIVE_HEADER] == 1


def test_a_redriven_branch_reopens_its_root_until_it_ends(world: World) -> None:
    world.tasks.create({"id": "root"})
    world.tasks.register_branches("root", ["c1"])
    root_header = {"x-asya-root-id": "root"}
    world.run(world.x_sink, {**_ended("root", "succeeded"), "headers": root_header})
    world.fail("c1", headers=root_header)
    assert world.tasks.get("root")["status"] == "failed"  # type: ignore[index]
    world.sump.redrive("c1")
    root = world.tasks.get("root")
    assert root is not None
    assert (root["status"], root.get("n_failed"), "c1" in root["done_ids"]) == ("running", 0, False)
    [sent] = world.queue("b")
    world.succeed(sent)
    done = world.tasks.get("root")
    assert done is not None
    assert (done["status"], done["n_succeeded"]) == ("succeeded", 2)


def test_a_message_that_never_parsed_is_redriven_from_the_fixed_envelope(world: World) -> None:
    world.run(world.x_sump, '{"id": "raw-1", "payload": ', {"MessageId": "m-1"})
    [entry] = world.sump.list(reason="ParseError", actor=None, since=None, limit=10, cursor=None)["entries"]
    with pytest.raises(TaskError) as refused:
        world.sump.redrive(entry["id"])
    assert refused.value.status == 409
    assert "fixed envelope" in str(refused.value)
    assert isinstance(world.sump.show(entry["id"])["kept"], dict)
    with pytest.raises(TaskError) as invalid:
        world.sump.redrive(entry["id"], envelope={"route": {"prev": [], "curr": "a", "next": []}})
    assert invalid.value.status == 400  # no payload: not an envelope yet
    forged = {"route": {"prev": [], "curr": "a", "next": []}, "headers": {"x-asya-root-id": "other"}, "payload": 1}
    with pytest.raises(TaskError) as reserved:
        world.sump.redrive(entry["id"], envelope=forged)
    assert (reserved.value.status, "x-asya-root-id" in str(reserved.value)) == (400, True)
    fixed = {"route": {"prev": [], "curr": "a", "next": ["b"]}, "payload": {"n": 1}}
    redriven, _ = world.sump.redrive(entry["id"], envelope=fixed)
    assert redriven
    [sent] = world.queue("a")
    assert (sent["id"], sent["payload"], sent["headers"]) == (entry["id"], {"n": 1}, {REDRIVE_HEADER: 1})


def test_a_redrive_is_refused_when_it_cannot_be_done(world: World) -> None:
    world.tasks.create({"id": "t1"})
    world.fail("t1")
    with pytest.raises(TaskError) as unknown:
        world.sump.redrive("t1", to="ghost")
    assert (unknown.value.status, "ghost" in str(unknown.value)) == (400, True)
    with pytest.raises(TaskError) as crew:
        world.sump.redrive("t1", to="x-sink")
    assert crew.value.status == 400
    with pytest.raises(TaskError) as missing:
        world.sump.redrive("nope")
    assert missing.value.status == 404
    world.tasks.client.update_item(
        TableName=TASKS,
        Key={"id": {"S": "t1"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "succeeded"}},
    )
    with pytest.raises(TaskError) as ended:
        world.sump.redrive("t1")
    assert ended.value.status == 409
    assert world.queue("b") == []


def test_a_redriven_hop_its_children_and_its_results_are_new_ones() -> None:
    assert Hop("a", "t1", 1, 1).key() != Hop("a", "t1", 1, 1, redrives=1).key()
    assert Hop("a", "t1", 1, 1).key() == Hop("a", "t1", 1, 1, redrives=0).key()  # unchanged for the rest
    plain = parse_envelope(json.dumps({"id": "t1", "route": {"prev": [], "curr": "a", "next": []}, "payload": 1}))
    redriven = plain.model_copy(update={"headers": {REDRIVE_HEADER: 1}})
    assert child_id(plain, 1) != child_id(redriven, 1)


def _ended(envelope_id: str, phase: str) -> dict[str, Any]:
    return {
        "id": envelope_id,
        "route": {"prev": ["a"], "curr": "", "next": []},
        "headers": {},
        "status": {"phase": phase, "actor": "a", "reason": "Completed"},
        "payload": {"own": True},
    }


def test_a_branch_a_join_gathers_is_kept_and_listed_but_not_redriven_on_its_own(world: World) -> None:
    """Its failure went to its join, which counted it and went on without it (or failed)."""
    frame = {"fan": "f1", "join": "fixer", "slot": 1, "width": 2, "into": "root"}
    failed = {
        "id": "b1",
        "parent_id": "root",
        "route": {"prev": ["a"], "curr": "b", "next": ["fixer"]},
        "headers": {"x-asya-join": [frame], "x-asya-root-id": "root"},
        "status": {"phase": "failed", "actor": "b", "reason": "HandlerTimeout", "error": {"message": "too slow"}},
        "payload": {"error": "handler_timeout", "details": {}, "original_payload": {"n": 1}},
    }
    world.run(world.x_sump, failed)
    assert [envelope["id"] for envelope in world.queue("fixer")] == ["b1"], "its ending went to its join"
    assert world.tasks.get("b1") is None, "the join records how it ended"
    assert world.sump.show("b1")["entry"]["reason"] == "HandlerTimeout"
    with pytest.raises(TaskError) as joined:
        world.sump.redrive("b1")
    assert joined.value.status == 409
    assert "the join 'fixer' gathers" in str(joined.value)
    assert world.queue("b") == []


def test_a_kept_copy_too_large_for_an_answer_is_shown_as_a_link(world: World) -> None:
    """Lambda answers at most 6 MB: a kept message larger than an answer may carry (one whose payload
    travelled claim-checked, restored when x-sump kept it) is a presigned link."""
    world.fail("big-1")
    entry = world.sump.show("big-1")["entry"]
    kept = json.loads(world.s3.get_object(Bucket=BUCKET, Key=entry["key"])["Body"].read())
    kept["payload"] = {"text": "é" * 1_000_000}  # 2 MB kept, over 6 MB as JSON in an answer
    world.s3.put_object(Bucket=BUCKET, Key=entry["key"], Body=json.dumps(kept, ensure_ascii=False).encode())
    shown = world.sump.show("big-1")
    assert shown["kept"] is None
    assert shown["kept_url"].startswith(f"https://{BUCKET}.s3.amazonaws.com/{entry['key']}?")
    assert shown["entry"]["id"] == "big-1"
    world.fail("small-1")
    assert world.sump.show("small-1")["kept"]["id"] == "small-1"


def test_x_sumps_cursor_names_no_envelope_and_opens_only_for_its_caller(world: World) -> None:
    """The review's finding 7: bo's first page of x-sump's list showed nothing of his, and its cursor
    named one of ana's failed envelopes. Sealed, it names none, and ana cannot go on with it."""
    import base64

    from asya_gateway.callers import Caller

    for number in range(3):
        world.tasks.create({"id": f"ana{number}", "owner": "ana"})
        world.fail(f"ana{number}")
    as_bo = Sump(world.service.as_caller(Caller("bo")), world.index)
    page = as_bo.list(reason=None, actor=None, since=None, limit=1, cursor=None)
    cursor = page["next_cursor"]
    assert page["entries"] == []
    assert cursor is not None
    assert b"ana" not in base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    as_bo.list(reason=None, actor=None, since=None, limit=1, cursor=cursor)
    as_ana = Sump(world.service.as_caller(Caller("ana")), world.index)
    with pytest.raises(TaskError, match="cursor is not one this API returned to this caller") as refused:
        as_ana.list(reason=None, actor=None, since=None, limit=1, cursor=cursor)
    assert refused.value.status == 400
