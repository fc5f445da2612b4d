"""Fan-in (`asya.joins`): a join actor receives its branches' results as one list, in branch order,
once every branch has ended, under each `on_failure` policy; redelivered arrivals and joined envelopes
change nothing; fans of 0 and 1, nested fans, and branches that end before the join."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from asya.names import SINK, SUMP
from asya.task_store import TaskStore
from asya_crew import sink, sump
from asya_crew.crew import CrewActor, CrewSettings
from asya_local.testing.inprocess import Function, InProcessMesh
from asya_local.testing.tables import JOINS, TASKS, create_tables
from asya_local.testing.tables import SUMP as SUMP_TABLE
from tests.support import handlers

NS = "joins"
BUCKET = "joins-bucket"
STATUS = {"ASYA_TASKS_TABLE": TASKS, "ASYA_CLAIM_BUCKET": BUCKET}
CREW = {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET, "ASYA_TASKS_TABLE": TASKS, "ASYA_CLAIM_BUCKET": BUCKET}
SINK_ENV = {**CREW, "ASYA_RESULTS_INLINE_MAX_BYTES": "4096"}  # as `asya_cdk.environment.crew_environment` sets
SUMP_ENV = {**CREW, "ASYA_SUMP_TABLE": SUMP_TABLE}


def join_env(on_failure: Any = "fail_fast") -> dict[str, str]:
    return {"ASYA_JOIN": json.dumps(on_failure), "ASYA_JOINS_TABLE": JOINS}


def twice(function: Function) -> Function:
    """Every batch delivered twice: the second delivery finds everything the first one did."""

    def deliver(event: dict[str, Any], context: Any) -> dict[str, Any]:
        first = function(event, context)
        function(event, context)
        return first

    return deliver


class JoinMesh:
    """An in-process mesh with the crew, the task and joins tables and a bucket."""

    def __init__(
        self, handlers_by_actor: dict[str, str], actor_env: dict[str, dict[str, str]], *, redelivered: bool = False
    ) -> None:
        crew: dict[str, Function] = {
            SINK: CrewActor(CrewSettings.from_env(SINK, SINK_ENV), sink.Sink([]).decide).handle,
            SUMP: CrewActor(CrewSettings.from_env(SUMP, SUMP_ENV), sump.decide).handle,
        }
        self.inner = InProcessMesh(NS, handlers_by_actor, env=STATUS, functions=crew, actor_env=actor_env)
        self.redelivered = redelivered

    def __enter__(self) -> JoinMesh:
        self.inner.__enter__()
        create_tables(boto3.client("dynamodb"))
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})  # to count writes
        if self.redelivered:
            self.inner.functions = {actor: twice(function) for actor, function in self.inner.functions.items()}
        self.tasks = TaskStore(TASKS)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inner.__exit__(*exc)

    def run(self, route: list[str], payload: Any) -> str:
        task_id = self.inner.send(route, payload)
        self.inner.run_until_idle()
        return task_id

    def result(self, task_id: str) -> dict[str, Any]:
        task = self.tasks.get(task_id)
        assert task is not None
        return task


def fan_join(on_failure: Any = "fail_fast", *, redelivered: bool = False) -> JoinMesh:
    """split (a source) → score (fails on "bad") → summary (the join of split's branches)."""
    return JoinMesh(
        {
            "split": "tests.support.handlers.fan_out",
            "score": "tests.support.handlers.picky",
            "summary": "tests.support.handlers.gather",
        },
        {"split": {"ASYA_JOINED_BY": "summary"}, "summary": join_env(on_failure)},
        redelivered=redelivered,
    )


ROUTE = ["split", "score", "summary"]


@pytest.fixture(autouse=True)
def calls() -> list[Any]:
    """What the join handlers were called with (`handlers.gather`)."""
    handlers.CALLS.clear()
    return handlers.CALLS


@pytest.mark.parametrize("redelivered", [False, True], ids=["once", "every-batch-twice"])
def test_the_join_gets_every_branch_in_order_once_all_have_ended(calls: list[Any], redelivered: bool) -> None:
    with fan_join(redelivered=redelivered) as mesh:
        task_id = mesh.run(ROUTE, {"items": [1, 2, 3, 4, 5]})
        assert calls == [[{"item": n, "seen": True} for n in (1, 2, 3, 4, 5)]], "one call, branch order"
        task = mesh.result(task_id)
        assert task["status"] == "succeeded"
        assert json.loads(task["output"]) == {"joined": calls[0]}
        assert "branch_ids" not in task, "the join accounts for the branches it gathers, not the root"
        branches = [record for record in _records(mesh) if record["id"] != task_id]
        assert len(branches) == 4
        assert {(b["status"], b["reason"], b["joined_into"], b["root_id"]) for b in branches} == {
            ("succeeded", "Joined", task_id, task_id)
        }


POLICIES = [
    ("fail_fast", None),
    ({"tolerate": 1}, [{"item": n, "seen": True} for n in (1, 3, 4)]),
    ({"tolerate": "50%"}, [{"item": n, "seen": True} for n in (1, 3, 4)]),
    ("collect", "collected"),
]


@pytest.mark.parametrize("redelivered", [False, True], ids=["once", "every-batch-twice"])
@pytest.mark.parametrize(
    ("on_failure", "expected"), POLICIES, ids=["fail_fast", "tolerate-1", "tolerate-50%", "collect"]
)
def test_one_failing_branch_under_each_policy(
    calls: list[Any], on_failure: Any, expected: Any, redelivered: bool
) -> None:
    with fan_join(on_failure, redelivered=redelivered) as mesh:
        task_id = mesh.run(ROUTE, {"items": [1, "bad", 3, 4]})
        task = mesh.result(task_id)
        [failed] = [record for record in _records(mesh) if record["status"] == "failed" and record["id"] != task_id]
        assert (failed["reason"], failed["actor"], failed["joined_into"]) == ("HandlerError", "score", task_id)
        assert failed["error"]["message"] == "bad item"
        kept = boto3.client("s3").list_object_versions(Bucket=BUCKET, Prefix=f"results/{NS}/{failed['id']}/")
        assert [version["Key"].rsplit("/", 1)[-1] for version in kept["Versions"]] == ["failed.json"], (
            "x-sink keeps the branch's failure once, however often it is delivered"
        )
        sumped = _sumped()
        if expected is None:
            assert calls == [], "the join failed: its handler never ran"
            assert (task["status"], task["reason"]) == ("failed", "JoinFailed")
            assert "1 of 4 branches failed (on_failure: fail_fast)" in task["error"]["message"]
            assert "bad item" in task["error"]["message"]
            assert [(entry["id"], entry["reason"]) for entry in sumped] == [(task_id, "JoinFailed")], (
                "x-sump keeps the join's failure, not the branch's"
            )
            return
        assert task["status"] == "succeeded", "a failure the join tolerates does not fail the task"
        assert sumped == [], "a failure the join tolerates is not an x-sump arrival"
        [joined] = calls
        if expected == "collected":
            assert [b.get("item") for b in joined if "item" in b] == [1, 3, 4]
            assert joined[1]["error"] == "handler_error"
            assert joined[1]["original_payload"] == {"item": "bad"}
        else:
            assert joined == expected


def _records(mesh: JoinMesh) -> list[dict[str, Any]]:
    from asya.dynamo import from_item

    items = boto3.client("dynamodb").scan(TableName=TASKS)["Items"]
    return [from_item(item) for item in items]


def _sumped() -> list[dict[str, Any]]:
    from asya.dynamo import from_item

    return [from_item(item) for item in boto3.client("dynamodb").scan(TableName=SUMP_TABLE)["Items"]]


def test_a_branch_that_fails_on_the_way_to_x_sump_is_gathered_as_failed(calls: list[Any]) -> None:
    """An infrastructure error goes straight to x-sump, which keeps and lists it as always, and hands
    the ending to the join."""
    with fan_join("collect") as mesh:
        task_id = mesh.run(ROUTE, {"items": [1, "set"]})
        [joined] = calls
        assert joined[0] == {"item": 1, "seen": True}
        assert joined[1]["error"] == "unserializable_output"
        assert mesh.result(task_id)["status"] == "succeeded"
        assert [entry["reason"] for entry in _sumped()] == ["UnserializableOutput"]
        [branch] = [record for record in _records(mesh) if record["id"] != task_id]
        assert (branch["status"], branch["reason"]) == ("failed", "UnserializableOutput")


@pytest.mark.parametrize(
    ("items", "expected"), [([], []), ([7], [{"item": 7, "seen": True}])], ids=["width-0", "width-1"]
)
def test_a_fan_of_none_or_one_is_joined_too(calls: list[Any], items: list[Any], expected: list[Any]) -> None:
    with fan_join() as mesh:
        task_id = mesh.run(ROUTE, {"items": items})
        assert calls == [expected]
        task = mesh.result(task_id)
        assert (task["status"], json.loads(task["output"])) == ("succeeded", {"joined": expected})


def test_an_envelope_that_passed_no_source_is_a_join_of_one(calls: list[Any]) -> None:
    with fan_join() as mesh:
        task_id = mesh.run(["summary"], {"alone": True})
        assert calls == [[{"alone": True}]]
        assert mesh.result(task_id)["status"] == "succeeded"


def test_a_join_header_that_cannot_be_followed_goes_to_x_sump_without_it(calls: list[Any]) -> None:
    with fan_join() as mesh:
        task_id = mesh.inner.send(["summary"], {"x": 1}, headers={"x-asya-join": [{"fan": "f", "slot": "one"}]})
        mesh.inner.run_until_idle()
        assert calls == []
        [entry] = _sumped()
        assert (entry["id"], entry["reason"]) == (task_id, "InvalidEnvelope")
        assert "x-asya-join" in entry["message"]
        kept = json.loads(boto3.client("s3").get_object(Bucket=BUCKET, Key=entry["key"])["Body"].read())
        assert "x-asya-join" not in kept["headers"], "kept without it, so x-sump does not hand it back"


def nested(inner: Any = "fail_fast", outer: Any = "fail_fast") -> JoinMesh:
    """split (groups, a source of outer) → explode (items, a source of inner) → score → inner → outer."""
    return JoinMesh(
        {
            "split": "tests.support.handlers.groups",
            "explode": "tests.support.handlers.fan_out",
            "score": "tests.support.handlers.picky",
            "inner": "tests.support.handlers.gather",
            "outer": "tests.support.handlers.gather",
        },
        {
            "split": {"ASYA_JOINED_BY": "outer"},
            "explode": {"ASYA_JOINED_BY": "inner"},
            "inner": join_env(inner),
            "outer": join_env(outer),
        },
    )


NESTED = ["split", "explode", "score", "inner", "outer"]


def test_nested_fans_join_inside_out(calls: list[Any]) -> None:
    """A fan-out inside each branch is joined first; the outer join gets the inner joins' results."""
    with nested() as mesh:
        task_id = mesh.run(NESTED, {"groups": [[1, 2], [3], [4, 5, 6]]})
        *inner, outer = calls
        groups = [[{"item": n, "seen": True} for n in group] for group in ([1, 2], [3], [4, 5, 6])]
        assert sorted(inner, key=len) == sorted(groups, key=len)
        assert outer == [{"joined": group} for group in groups], "the outer join keeps its branches' order"
        task = mesh.result(task_id)
        assert (task["status"], json.loads(task["output"])) == ("succeeded", {"joined": outer})
        assert {record["status"] for record in _records(mesh)} == {"succeeded"}


def test_a_failed_inner_join_is_a_failed_branch_of_the_outer_one(calls: list[Any]) -> None:
    with nested(inner="fail_fast", outer="collect") as mesh:
        task_id = mesh.run(NESTED, {"groups": [[1], [2, "bad"]]})
        *_, outer = calls
        assert outer[0] == {"joined": [{"item": 1, "seen": True}]}
        assert outer[1]["error"] == "join_failed"
        assert mesh.result(task_id)["status"] == "succeeded", "the outer join collects its failed branch"


def test_one_actor_may_join_both_fans_of_a_nested_route(calls: list[Any]) -> None:
    """[split, explode, score, gather, gather]: the first visit joins explode's fans and runs the
    handler on each, the second joins split's."""
    mesh = JoinMesh(
        {
            "split": "tests.support.handlers.groups",
            "explode": "tests.support.handlers.fan_out",
            "score": "tests.support.handlers.picky",
            "gather": "tests.support.handlers.gather",
        },
        {"split": {"ASYA_JOINED_BY": "gather"}, "explode": {"ASYA_JOINED_BY": "gather"}, "gather": join_env()},
    )
    with mesh:
        task_id = mesh.run(["split", "explode", "score", "gather", "gather"], {"groups": [[1, 2], [3]]})
        *inner, outer = calls
        groups = [[{"item": n, "seen": True} for n in group] for group in ([1, 2], [3])]
        assert sorted(inner, key=len) == sorted(groups, key=len)
        assert outer == [{"joined": group} for group in groups]
        assert mesh.result(task_id)["status"] == "succeeded"


def test_branches_of_a_canceled_task_stop_and_the_join_never_runs(calls: list[Any]) -> None:
    with fan_join("collect") as mesh:
        task_id = mesh.inner.send(ROUTE, {"items": [1, 2, 3]})
        mesh.tasks.create({"id": task_id})
        mesh.inner._deliver_one_batch("split")
        mesh.tasks.cancel(task_id)
        mesh.inner.run_until_idle()
        assert calls == [], "the joined envelope stops at the join's pre-flight check"
        assert {record["status"] for record in _records(mesh)} == {"canceled"}


def test_large_branches_are_kept_with_their_payloads_in_s3(calls: list[Any]) -> None:
    """A kept branch over `SLOT_INLINE_BYTES` costs a few write units, not one per kilobyte."""
    from asya.gathering import SLOT_INLINE_BYTES

    big = "x" * SLOT_INLINE_BYTES
    with fan_join() as mesh:
        mesh.run(ROUTE, {"items": [big + "1", big + "2"]})
        assert calls == [[{"item": big + "1", "seen": True}, {"item": big + "2", "seen": True}]]
        slots = boto3.client("dynamodb").scan(TableName=JOINS)["Items"]
        bodies = [item["body"]["S"] for item in slots if "body" in item]
        assert len(bodies) == 2
        assert all(len(body) < 2_048 and "payload_ref" in body for body in bodies)


def test_a_branch_whose_payload_cannot_be_read_back_counts_as_failed(calls: list[Any]) -> None:
    """The big branch is kept with its payload in S3; the object is gone by the time the last branch
    arrives, so the join gets that branch as failed (`PayloadUnreadable`) instead of never completing."""
    from asya.gathering import SLOT_INLINE_BYTES
    from asya_local.functions.lambda_shapes import LambdaContext, invoke_with_batch

    with fan_join("collect") as mesh:
        inner = mesh.inner
        task_id = inner.send(ROUTE, {"items": ["x" * SLOT_INLINE_BYTES, 2]})
        for actor in ("split", "score"):
            while inner._deliver_one_batch(actor):
                pass
        url = inner._urls["summary"]
        s3 = boto3.client("s3")
        arrivals = inner._sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        for message in sorted(arrivals, key=lambda message: -len(message["Body"])):  # the big one first
            invoke_with_batch(inner.functions["summary"], inner._sqs, url, [message], LambdaContext("summary"))
            for kept in s3.list_objects_v2(Bucket=BUCKET, Prefix="claims/").get("Contents", []):
                s3.delete_object(Bucket=BUCKET, Key=kept["Key"])  # expired, say
        inner.run_until_idle()
        [joined] = calls
        assert [branch.get("error") for branch in joined] == ["payload_unreadable", None]
        assert joined[1] == {"item": 2, "seen": True}
        assert mesh.result(task_id)["status"] == "succeeded"


def test_a_spark_source_frames_its_outputs_and_the_collector_learns_whom_the_join_accounts_for() -> None:
    """A Spark job routes through the same hop pipeline, and its decisions travel to the collector."""
    from asya.batch import BatchHops, Routed, replay
    from asya.config import SidecarConfig

    names = {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": "split", "ASYA_HANDLER": "x.y", "ASYA_JOINED_BY": "summary"}
    hops = BatchHops(SidecarConfig.from_env(names), handler=replay([{"i": 0}, {"i": 1}, {"i": 2}]))
    body = json.dumps({"id": "t1", "route": {"prev": [], "curr": "split", "next": ["score", "summary"]}, "payload": {}})
    routed = [Routed.from_json(row.to_json()) for row in hops.run([("m0", body)])]
    frames = [json.loads(row.body)["headers"]["x-asya-join"] for row in routed]
    assert [(frame[-1]["slot"], frame[-1]["width"], frame[-1]["into"]) for frame in frames] == [
        (0, 3, "t1"),
        (1, 3, "t1"),
        (2, 3, "t1"),
    ]
    assert [row.decision.joined for row in routed] == [False, True, True], "the root's own goes on as `into`"


def test_a_fan_wider_than_the_join_takes_fails_it_at_once_saying_so(calls: list[Any]) -> None:
    """`join.max_width` 3: a fan of 5 fails the join at its first arrival, its task with the reason."""
    mesh = JoinMesh(
        {
            "split": "tests.support.handlers.fan_out",
            "score": "tests.support.handlers.picky",
            "summary": "tests.support.handlers.gather",
        },
        {"split": {"ASYA_JOINED_BY": "summary"}, "summary": {**join_env(), "ASYA_JOIN_MAX_WIDTH": "3"}},
    )
    with mesh:
        task_id = mesh.run(ROUTE, {"items": [1, 2, 3, 4, 5]})
        task = mesh.result(task_id)
        assert calls == [], "the join's handler never runs"
        assert (task["status"], task["reason"]) == ("failed", "JoinFailed")
        assert task["error"]["message"].startswith(
            "a fan of 5 branches is wider than this join takes (join.max_width 3)"
        )
        branches = [record for record in _records(mesh) if record["id"] != task_id]
        assert {b["status"] for b in branches} == {"succeeded"}, "each branch's record ends"
        kept = boto3.client("dynamodb").scan(TableName=JOINS)["Items"]
        assert [int(item["slot"]["N"]) for item in kept] == [-1], "no branch is kept: only the fan's given-up mark"


@pytest.mark.parametrize("redelivered", [False, True], ids=["once", "every-batch-twice"])
def test_a_branch_giving_several_outputs_to_its_join_fails_it_and_the_task_with_it(
    calls: list[Any], redelivered: bool
) -> None:
    """[split, explode, summary], explode no source of a join: its two outputs for one branch would
    share the branch's one place in the list, the join keeping one and the task waiting on the other
    until its deadline. The branch fails instead, naming the actor, and the join with it."""
    mesh = JoinMesh(
        {
            "split": "tests.support.handlers.groups",
            "explode": "tests.support.handlers.fan_out",
            "summary": "tests.support.handlers.gather",
        },
        {"split": {"ASYA_JOINED_BY": "summary"}, "summary": join_env()},
        redelivered=redelivered,
    )
    with mesh:
        task_id = mesh.run(["split", "explode", "summary"], {"groups": [[1], [2, 3]]})
        task = mesh.result(task_id)
        assert calls == [], "the join's handler never runs"
        assert (task["status"], task["reason"]) == ("failed", "JoinFailed")
        assert "1 of 2 branches failed (on_failure: fail_fast): branch 2 of 2" in task["error"]["message"]
        assert "a branch gives its join one output: explode gave 2" in task["error"]["message"]
        [branch] = [record for record in _records(mesh) if record["id"] != task_id]
        assert (branch["status"], branch["reason"], branch["actor"]) == ("failed", "UnjoinedFanOut", "explode")
        assert "its branch has one place in summary's list" in branch["error"]["message"]
        assert sorted(entry["reason"] for entry in _sumped()) == ["JoinFailed", "UnjoinedFanOut"]


@pytest.mark.parametrize("bad", [0, 2], ids=["first-fails", "last-fails"])
def test_the_joined_envelope_s_hop_names_the_arrival_that_joined_it_as_its_parent(calls: list[Any], bad: int) -> None:
    """The last branch's arrival sends the joined envelope on: its segment is the joined hop's parent, as
    every other hop's is the hop that sent it (docs/status.md, "Traces"), whichever branch the joined
    envelope goes on as. A failed branch arrives last, by way of x-sump."""
    traced = {"ASYA_TRACING": "true"}
    mesh = JoinMesh(
        {
            "split": "tests.support.handlers.fan_out",
            "score": "tests.support.handlers.picky",
            "summary": "tests.support.handlers.gather",
        },
        {
            "split": {"ASYA_JOINED_BY": "summary", **traced},
            "score": traced,
            "summary": {**join_env("collect"), **traced},
        },
    )
    items: list[Any] = [1, 2, 3]
    items[bad] = "bad"
    with mesh:
        mesh.run(ROUTE, {"items": items})
        xray = boto3.client("xray")
        ids = [summary["Id"] for summary in xray.get_trace_summaries(StartTime=0, EndTime=2**31)["TraceSummaries"]]
        [trace] = xray.batch_get_traces(TraceIds=ids)["Traces"]
    segments = [json.loads(segment["Document"]) for segment in trace["Segments"]]
    at_join = {s["annotations"]["outcome"]: s for s in segments if s["name"] == "summary"}
    assert set(at_join) == {"gathered", "joined", "forwarded"}, [s["annotations"] for s in segments]
    assert at_join["forwarded"]["parent_id"] == at_join["joined"]["id"]
