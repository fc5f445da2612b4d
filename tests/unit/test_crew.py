"""The crew: what x-sink and x-sump keep in S3, what they forward, that redelivery adds nothing, and
the final task status they record; x-pause pausing a task and x-resume continuing its route."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya.claims import Claims
from asya.task_store import TaskStore
from asya_crew import pause, resume, sink, sump
from asya_crew.crew import CrewActor, CrewSettings
from asya_gateway.views import task_view
from asya_local.functions.lambda_shapes import REGION, sqs_record
from asya_local.testing.tables import TASKS, create_idempotency_table, create_tables
from tests.support.crew import BUCKET, NS, Crew, sink_actor, sump_actor


@pytest.fixture
def crew() -> Iterator[Crew]:
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        sqs = boto3.client("sqs", region_name=REGION)
        for actor in ("x-sink", "x-sump", "notify"):
            sqs.create_queue(QueueName=f"asya-{NS}-{actor}")
        yield Crew(s3, sqs)


def _terminal(envelope_id: str, phase: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": envelope_id,
        "route": {"prev": ["a", "b"], "curr": "", "next": []},
        "headers": {"trace_id": "t"},
        "status": {"phase": phase, "actor": "b", "reason": "Completed" if phase == "succeeded" else "HandlerError"},
        "payload": {"answer": 42},
        **fields,
    }


def test_sink_keeps_success_under_a_key_found_from_the_id(crew: Crew) -> None:
    assert crew.run(sink_actor(), _terminal("task-1", "succeeded")) == {"batchItemFailures": []}
    kept = crew.kept()
    assert list(kept) == ["results/crew/task-1/succeeded.json"]
    assert kept["results/crew/task-1/succeeded.json"]["payload"] == {"answer": 42}
    assert crew.queue("x-sump") == []


def test_sink_keeps_failures_and_forwards_them_to_sump(crew: Crew) -> None:
    crew.run(sink_actor(), _terminal("task-2", "failed"))
    assert list(crew.kept()) == ["results/crew/task-2/failed.json"]
    [forwarded] = crew.queue("x-sump")
    assert forwarded["id"] == "task-2"


def test_redelivery_does_not_create_a_second_result(crew: Crew) -> None:
    actor = sink_actor()
    crew.run(actor, _terminal("task-3", "succeeded"))
    crew.run(actor, _terminal("task-3", "succeeded"))
    assert list(crew.kept()) == ["results/crew/task-3/succeeded.json"]


def test_sink_dispatches_hooks_by_phase_and_keeps_what_hooks_return(crew: Crew) -> None:
    actor = sink_actor([("notify", frozenset({"failed"}))])
    crew.run(actor, _terminal("ok-1", "succeeded"), _terminal("bad-1", "failed"))
    [copy] = crew.queue("notify")
    assert copy["id"] == "bad-1"
    assert copy["route"] == {"prev": ["a", "b"], "curr": "notify", "next": []}
    assert copy["headers"]["x-asya-hook"] == "notify"

    done = {**copy, "route": {"prev": ["a", "b", "notify"], "curr": "", "next": []}, "status": {"phase": "succeeded"}}
    crew.run(actor, done)
    assert "results/crew/bad-1/hooks/notify.succeeded.json" in crew.kept()
    assert crew.kept()["results/crew/bad-1/failed.json"]["status"]["phase"] == "failed", "the task's result stays"
    assert crew.queue("notify") == [], "a hook's own envelope dispatches nothing"


def test_sink_sends_what_is_not_an_envelope_to_sump(crew: Crew) -> None:
    assert crew.run(sink_actor(), "not json at all") == {"batchItemFailures": []}
    [forwarded] = crew.queue("x-sump")
    assert forwarded["status"]["reason"] == "ParseError"


def _sump_log(actor: CrewActor, monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What x-sump logs from here on: the service's logger outlives the stdout an earlier test captured."""
    output = io.StringIO()
    monkeypatch.setattr(actor.telemetry.logger.registered_handler, "stream", output)
    return output


def test_sump_keeps_infra_errors_with_their_reason(crew: Crew, monkeypatch: pytest.MonkeyPatch) -> None:
    failure = _terminal("task-4", "failed")
    failure["status"]["reason"] = "RouteMismatch"
    actor = sump_actor()
    output = _sump_log(actor, monkeypatch)
    crew.run(actor, failure)
    kept = crew.kept()["results/crew/task-4/sump.json"]
    assert kept["status"]["reason"] == "RouteMismatch"
    assert '"message":"envelope reached x-sump"' in output.getvalue().replace(": ", ":")


def test_sump_logs_each_arrival_under_its_own_envelope_id(crew: Crew, monkeypatch: pytest.MonkeyPatch) -> None:
    actor = sump_actor()
    output = _sump_log(actor, monkeypatch)
    crew.run(actor, _terminal("task-5", "failed"), _terminal("task-6", "failed"))
    logs = [json.loads(line) for line in output.getvalue().splitlines() if "envelope reached x-sump" in line]
    assert [(log["envelope_id"], log.get("correlation_id"), log["actor"]) for log in logs] == [
        ("task-5", "task-5", "b"),
        ("task-6", "task-6", "b"),
    ], "each with the actor it failed at, which `asya up`'s screen says"


def test_sump_records_a_redriven_message_as_failed(crew: Crew) -> None:
    raw = {"id": "task-5", "route": {"prev": [], "curr": "score", "next": ["post"]}, "payload": {"n": 1}}
    arn = {"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:asya-crew-score"}
    crew.run(sump_actor(), raw, attributes={**arn, "ApproximateReceiveCount": "1"})
    status = crew.kept()["results/crew/task-5/sump.json"]["status"]
    assert status["phase"] == "failed"
    assert status["reason"] == "Redriven"
    assert "asya-crew-score" in status["error"]["message"]


def test_sump_keeps_even_an_unparseable_body(crew: Crew) -> None:
    crew.run(sump_actor(), "\x00garbage")
    [(key, kept)] = crew.kept().items()
    assert key.startswith("results/crew/sqs-")
    assert kept["payload"]["original_payload"] == "\x00garbage"


def test_a_failed_write_leaves_only_that_record_for_redelivery(crew: Crew) -> None:
    actor = sink_actor()
    original = crew.s3.put_object

    def flaky_put(**kwargs: Any) -> Any:
        if "broken" in kwargs["Key"]:
            raise RuntimeError("S3 unavailable")
        return original(**kwargs)

    actor._s3 = type("S3", (), {"put_object": staticmethod(flaky_put)})()
    response = crew.run(actor, _terminal("fine", "succeeded"), _terminal("broken", "succeeded"))
    assert len(response["batchItemFailures"]) == 1
    assert list(crew.kept()) == ["results/crew/fine/succeeded.json"]


def test_crew_settings_name_missing_variables() -> None:
    with pytest.raises(ValueError, match="ASYA_RESULTS_BUCKET required by x-sink"):
        CrewSettings.from_env("x-sink", {"ASYA_NAMESPACE": NS})


# -- the crew's part in task status ---------------------------------------------------------------------

SETTINGS = {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET, "ASYA_TASKS_TABLE": TASKS}


@pytest.fixture
def tasks(crew: Crew) -> TaskStore:
    client = boto3.client("dynamodb")
    create_tables(client)
    for actor in ("x-pause", "x-resume", "post"):
        crew.sqs.create_queue(QueueName=f"asya-{NS}-{actor}")
    return TaskStore(TASKS, client=client)


def terminal(phase: str, **fields: Any) -> dict[str, Any]:
    status = {"phase": phase, "actor": "b", "reason": "Completed" if phase == "succeeded" else "HandlerError"}
    document = {"id": "t1", "route": {"prev": ["a"], "curr": "b", "next": []}, "headers": {}, "payload": {"x": 1}}
    document["status"] = status
    document.update(fields)
    return document


def actor(module: Any, name: str, decide: Any = None) -> CrewActor:
    return CrewActor(CrewSettings.from_env(name, SETTINGS), decide or module.decide)


def test_x_sink_records_the_result_location(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    crew.run(actor(sink, "x-sink", sink.Sink([]).decide), terminal("succeeded"))
    task = tasks.get("t1")
    assert task is not None
    assert (task["status"], task["progress"]) == ("succeeded", 100)
    assert task["result"] == f"s3://{BUCKET}/results/{NS}/t1/succeeded.json"


def test_x_sump_fails_an_open_task_but_not_an_ended_one(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    redriven = {"id": "t1", "route": {"prev": [], "curr": "a", "next": []}, "payload": {}}
    crew.run(actor(sump, "x-sump"), redriven)
    task = tasks.get("t1")
    assert task is not None
    assert (task["status"], task["reason"]) == ("failed", "Redriven")
    tasks.create({"id": "t2"})
    crew.run(actor(sink, "x-sink", sink.Sink([]).decide), terminal("failed", id="t2"))
    crew.run(actor(sump, "x-sump"), terminal("failed", id="t2"))  # x-sink forwarded it: already ended
    ended = tasks.get("t2")
    assert ended is not None
    assert ended["result"].endswith("/t2/failed.json")


INLINE = {**SETTINGS, "ASYA_RESULTS_INLINE_MAX_BYTES": "64", "ASYA_RESULTS_TTL_SECONDS": str(90 * 86_400)}


def inline_sink() -> CrewActor:
    return CrewActor(CrewSettings.from_env("x-sink", INLINE), sink.Sink([]).decide)


def test_x_sink_keeps_a_small_result_in_the_task_record_and_nothing_in_s3(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    crew.run(inline_sink(), terminal("succeeded"))
    task = tasks.get("t1")
    assert task is not None
    assert (task["status"], task["output"], task.get("result")) == ("succeeded", '{"x":1}', None)
    assert task_view(task)["output"] == {"x": 1}
    assert crew.kept() == {}
    assert task["expires_at"] - time.time() > 89 * 86_400  # lives as long as results in the bucket do


def test_x_sink_keeps_a_result_over_the_threshold_in_s3(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    crew.run(inline_sink(), terminal("succeeded", payload={"text": "x" * 64}))
    task = tasks.get("t1")
    assert task is not None
    assert ("output" not in task, task["result"]) == (True, f"s3://{BUCKET}/results/{NS}/t1/succeeded.json")
    assert list(crew.kept()) == [f"results/{NS}/t1/succeeded.json"]
    assert task["expires_at"] - time.time() < 8 * 86_400  # the record's own TTL: the result is in S3


def test_a_redelivered_small_result_is_kept_once(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    crew.run(inline_sink(), terminal("succeeded"))
    crew.run(inline_sink(), terminal("succeeded", payload={"x": 2}))  # not claimed: a second sink, say
    task = tasks.get("t1")
    assert task is not None
    assert (task["output"], task["n_succeeded"]) == ('{"x":1}', 1)
    assert crew.kept() == {}


def test_a_result_arriving_after_its_task_ended_otherwise_goes_to_s3(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    tasks.cancel("t1")
    crew.run(inline_sink(), terminal("succeeded"))
    task = tasks.get("t1")
    assert task is not None
    assert (task["status"], "output" in task) == ("canceled", False)
    assert list(crew.kept()) == [f"results/{NS}/t1/succeeded.json"]  # computed, so not thrown away


def test_the_small_results_of_a_fan_out_are_kept_on_each_branch_and_the_root(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1"])
    branch = terminal("succeeded", id="t1-1", parent_id="t1", headers={"x-asya-root-id": "t1"}, payload={"b": 1})
    crew.run(inline_sink(), terminal("succeeded"), branch)
    root, child = tasks.get("t1"), tasks.get("t1-1")
    assert root is not None
    assert child is not None
    assert (root["status"], root["output"], root["route"]) == (
        "succeeded",
        '{"x":1}',
        {"prev": ["a"], "curr": "b", "next": []},
    )
    assert (child["status"], child["output"]) == ("succeeded", '{"b":1}')
    assert crew.kept() == {}


def test_a_branch_result_redelivered_after_its_record_was_written_is_not_kept_again(
    crew: Crew, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first delivery writes the branch's record and stops before the root counts the branch; the
    redelivery counts it and finds the result already kept, so it writes nothing to S3."""
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1"])
    branch = terminal("succeeded", id="t1-1", parent_id="t1", headers={"x-asya-root-id": "t1"}, payload={"b": 1})
    crew.run(inline_sink(), terminal("succeeded"))
    close_branch = TaskStore._close_branch
    stops = iter([ConnectionError("the worker stopped here")])

    def stop_once(store: TaskStore, *args: Any) -> dict[str, Any] | None:
        for error in stops:
            raise error
        return close_branch(store, *args)

    monkeypatch.setattr(TaskStore, "_close_branch", stop_once)
    first = crew.run(inline_sink(), branch)
    assert first["batchItemFailures"]  # the message goes back to the queue
    crew.run(inline_sink(), branch)
    root, child = tasks.get("t1"), tasks.get("t1-1")
    assert root is not None
    assert child is not None
    assert (root["status"], child["status"], child["output"]) == ("succeeded", "succeeded", '{"b":1}')
    assert crew.kept() == {}


@pytest.mark.parametrize(("root_header", "writes"), [(True, 3), (False, 4)])
def test_a_fan_out_root_that_says_so_is_ended_without_trying_the_single_write(
    crew: Crew, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch, root_header: bool, writes: int
) -> None:
    """The root's own output of a fan-out carries the root header: x-sink counts it on the root at
    once (one write, not a refused single-write ending first), then the branch's record, then one
    write that counts the branch and ends the root. Without the header, as envelopes sent before it
    was added, it still ends right, with the refused write."""
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1"])
    made = []
    update = TaskStore._update_returning

    def counted(store: TaskStore, *args: Any, **kwargs: Any) -> Any:
        made.append(args[1])
        return update(store, *args, **kwargs)

    monkeypatch.setattr(TaskStore, "_update_returning", counted)
    own = terminal("succeeded", headers={"x-asya-root-id": "t1"} if root_header else {})
    branch = terminal("succeeded", id="t1-1", parent_id="t1", headers={"x-asya-root-id": "t1"}, payload={"b": 1})
    crew.run(inline_sink(), own, branch)
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["output"]) == ("succeeded", '{"x":1}')
    assert len(made) == writes


def _writes_to(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The task ids of every `UpdateItem` the task store makes from now on."""
    made: list[str] = []
    update = TaskStore._update_returning

    def counted(store: TaskStore, task_id: str, *args: Any, **kwargs: Any) -> Any:
        made.append(task_id)
        return update(store, task_id, *args, **kwargs)

    monkeypatch.setattr(TaskStore, "_update_returning", counted)
    return made


def _branch(n: int, phase: str = "succeeded") -> dict[str, Any]:
    headers = {"x-asya-root-id": "t1"}
    return terminal(phase, id=f"t1-{n}", parent_id="t1", headers=headers, payload={"b": n})


def test_branches_ending_in_one_batch_are_counted_on_their_root_in_one_write_that_ends_it(
    crew: Crew, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root's own ending and its three branches in one x-sink batch: the own ending is counted, each
    branch's record ends, and one write counts the three branches and ends the root (5 writes, where
    counting each branch on its own and then ending the root took 8)."""
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1", "t1-2", "t1-3"])
    made = _writes_to(monkeypatch)
    own = terminal("succeeded", headers={"x-asya-root-id": "t1"})
    crew.run(inline_sink(), _branch(1), own, _branch(2), _branch(3))
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["n_succeeded"], root["output"]) == ("succeeded", 4, '{"x":1}')
    assert sorted(root["done_ids"]) == ["t1", "t1-1", "t1-2", "t1-3"]
    assert made.count("t1") == 2
    assert len(made) == 5
    crew.run(inline_sink(), _branch(2), own)  # redelivered: nothing counts twice
    assert tasks.get("t1") == root


def test_a_root_waiting_for_a_branch_outside_the_batch_is_counted_not_ended(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1", "t1-2", "t1-3"])
    own = terminal("succeeded", headers={"x-asya-root-id": "t1"})
    crew.run(inline_sink(), own, _branch(1), _branch(2))
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["n_succeeded"]) == ("pending", 3)
    crew.run(inline_sink(), _branch(3))
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["n_succeeded"]) == ("succeeded", 4)


@pytest.mark.parametrize("branch_phase", ["succeeded", "canceled"])
def test_a_root_s_own_ending_after_all_its_branches_ends_it_in_the_write_that_counts_it(
    crew: Crew, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch, branch_phase: str
) -> None:
    """A fan-out sends its own envelope after its branches, so it usually ends last: one read of the
    root shows nothing else is open, and one write counts it and ends the root as its branches say."""
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1", "t1-2"])
    crew.run(inline_sink(), _branch(1), _branch(2, branch_phase))
    made = _writes_to(monkeypatch)
    crew.run(inline_sink(), terminal("succeeded", headers={"x-asya-root-id": "t1"}))
    assert made == ["t1"]
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["output"], root["progress"]) == (branch_phase, '{"x":1}', 100)
    assert root.get("reason") == ("Completed" if branch_phase == "succeeded" else None)  # its own, if how it ended
    assert root["own_outcome"] == "succeeded"  # how its own envelope ended, as `asya results` shows it
    assert len(root["done_ids"]) == 3


def test_a_branch_failing_in_the_same_batch_fails_the_root_it_ends(crew: Crew, tasks: TaskStore) -> None:
    """A failure at x-sink has a follow-up (its copy for x-sump), so it is counted at once, not with
    the batch: the batch's count of the others then sees that it ends the root, which ends failed."""
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1", "t1-2"])
    own = terminal("succeeded", headers={"x-asya-root-id": "t1"})
    crew.run(inline_sink(), own, _branch(1, "failed"), _branch(2))
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["n_succeeded"], root["n_failed"]) == ("failed", 2, 1)
    assert root["output"] == '{"x":1}'  # the root's own result stays, though it ended failed


def test_a_count_that_failed_sends_its_branches_back_and_their_redelivery_ends_the_root(
    crew: Crew, tasks: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks.create({"id": "t1"})
    tasks.register_branches("t1", ["t1-1", "t1-2"])
    count = TaskStore.count
    stops = iter([ConnectionError("DynamoDB went away")])

    def stop_once(store: TaskStore, *args: Any) -> None:
        for error in stops:
            raise error
        count(store, *args)

    monkeypatch.setattr(TaskStore, "count", stop_once)
    own = terminal("succeeded", headers={"x-asya-root-id": "t1"})
    first = crew.run(inline_sink(), own, _branch(1), _branch(2))
    assert len(first["batchItemFailures"]) == 2  # the branches' messages, not the root's own
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], sorted(root["done_ids"])) == ("pending", ["t1"])
    crew.run(inline_sink(), _branch(1), _branch(2))
    root = tasks.get("t1")
    assert root is not None
    assert (root["status"], root["n_succeeded"]) == ("succeeded", 3)
    assert crew.kept() == {}


def test_x_sink_keeps_every_result_in_s3_for_an_untracked_task(crew: Crew, tasks: TaskStore) -> None:
    crew.run(inline_sink(), terminal("succeeded", headers={"x-asya-mesh-status": "off"}))
    assert tasks.get("t1") is None
    assert list(crew.kept()) == [f"results/{NS}/t1/succeeded.json"]


def test_x_pause_pauses_with_the_prompt_and_x_resume_continues(crew: Crew, tasks: TaskStore) -> None:
    tasks.create({"id": "t1"})
    asked = {"prompt": "Approve the refund?", "fields": {"approved": {"type": "boolean"}}}
    held = {
        "id": "t1",
        "route": {"prev": ["a"], "curr": "x-pause", "next": ["post"]},
        "headers": {"x-asya-pause": asked},
        "status": {"phase": "processing", "actor": "x-pause"},
        "payload": {"x": 1},
    }
    crew.run(actor(pause, "x-pause", pause.Pause(tasks).decide), held)
    task = tasks.get("t1")
    assert task is not None
    assert (task["status"], task["pause"]) == ("paused", {**pause.DEFAULT_PAUSE, **asked})
    assert (task["actor"], task["route"]["curr"], task["hops"][-1][0]) == ("x-pause", "x-pause", 1), "waits there"
    assert crew.kept()[f"results/{NS}/t1/pause.json"]["route"]["curr"] == "x-pause"
    crew.run(actor(resume, "x-resume"), held)
    forwarded = crew.queue("post")
    assert len(forwarded) == 1
    assert forwarded[0]["route"] == {"prev": ["a", "x-pause"], "curr": "post", "next": []}
    assert "x-asya-pause" not in forwarded[0]["headers"]


def test_x_resume_decides_a_flow_program_on_a_payload_kept_in_s3(crew: Crew, tasks: TaskStore) -> None:
    """The gateway sends a resumed envelope over the claim-check threshold with its payload in S3: the
    program's decision after the pause reads the payload itself, which goes on in S3 again."""
    approved = ["get", ["var"], ["lit", "approved"], ["lit", None]]
    nodes = [
        {"call": "x-pause", "next": 1},
        {"if": approved, "then": 2, "else": 3, "src": "p.get('approved')"},
        {"call": "post", "next": 3},
        {"return": True},
    ]
    program = {"flow": "reviewed", "source": "flows.py", "version": "0", "start": 0, "nodes": nodes}
    payload = {"approved": True, "notes": "x" * 2_000}
    held = {
        "id": "t1",
        "route": {"prev": ["a"], "curr": "x-pause", "next": []},
        "headers": {"x-asya-flow": {"program": program, "at": 0}},
        "payload": payload,
    }
    claims = Claims(BUCKET, NS, 1_024)
    body = claims.check_in(held, json.dumps(held))
    assert json.loads(body)["payload"] is None, "sent with its payload in S3"
    crew.run(actor(resume, "x-resume", partial(resume.decide, claims=claims)), body)
    [forwarded] = crew.queue("post")
    assert forwarded["route"] == {"prev": ["a", "x-pause"], "curr": "post", "next": []}
    assert forwarded["payload"] is None
    assert claims.restore(forwarded)["payload"] == payload


def test_x_resume_refuses_an_envelope_not_held_by_x_pause(crew: Crew, tasks: TaskStore) -> None:
    stray = {"id": "t1", "route": {"prev": [], "curr": "post", "next": []}, "payload": {}}
    crew.run(actor(resume, "x-resume"), json.dumps(stray))
    sumped = crew.queue("x-sump")
    assert [body["status"]["reason"] for body in sumped] == ["RouteMismatch"]


IDEMPOTENCY = "asya-crew-idempotency"


def _claiming_sink() -> CrewActor:
    """x-sink as deployed: claiming each record in the hop ledger before keeping it."""
    create_idempotency_table(boto3.client("dynamodb", region_name=REGION), IDEMPOTENCY)
    env = {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET, "ASYA_IDEMPOTENCY_TABLE": IDEMPOTENCY}
    return CrewActor(CrewSettings.from_env("x-sink", env), sink.Sink([]).decide)


def test_a_redelivered_failure_reaches_sump_once_and_is_written_once(crew: Crew) -> None:
    crew.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    actor = _claiming_sink()
    assert crew.run(actor, _terminal("task-9", "failed")) == {"batchItemFailures": []}
    assert crew.run(_sink_like(actor), _terminal("task-9", "failed")) == {"batchItemFailures": []}
    versions = crew.s3.list_object_versions(Bucket=BUCKET)["Versions"]
    assert [v["Key"] for v in versions] == ["results/crew/task-9/failed.json"]
    assert [forwarded["id"] for forwarded in crew.queue("x-sump")] == ["task-9"]


def test_a_sink_record_whose_forward_failed_is_forwarded_on_redelivery_and_written_once(crew: Crew) -> None:
    from asya.transport import MemoryTransport

    crew.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    transport = MemoryTransport()
    actor = _claiming_sink()
    failing = CrewActor(actor.settings, actor.decide, transport=transport, ledger=actor.ledger)
    transport.fail_entries = {"e0"}
    assert len(crew.run(failing, _terminal("task-10", "failed"))["batchItemFailures"]) == 1
    transport.fail_entries = set()
    assert crew.run(_sink_like(failing), _terminal("task-10", "failed")) == {"batchItemFailures": []}
    forwarded = transport.queues[f"asya-{NS}-x-sump"]
    assert [json.loads(message.body)["id"] for message in forwarded] == ["task-10"]
    versions = crew.s3.list_object_versions(Bucket=BUCKET)["Versions"]
    assert [v["Key"] for v in versions] == ["results/crew/task-10/failed.json"]


def test_a_result_that_sends_nothing_on_is_kept_without_a_claim(crew: Crew) -> None:
    """Its object is written once (a conditional write) whatever the deliveries: no hop record."""
    crew.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    actor = _claiming_sink()
    assert crew.run(actor, _terminal("task-12", "succeeded")) == {"batchItemFailures": []}
    assert crew.run(_sink_like(actor), _terminal("task-12", "succeeded")) == {"batchItemFailures": []}
    versions = crew.s3.list_object_versions(Bucket=BUCKET)["Versions"]
    assert [v["Key"] for v in versions] == ["results/crew/task-12/succeeded.json"]
    hops = boto3.client("dynamodb", region_name=REGION).scan(TableName=IDEMPOTENCY)["Items"]
    assert hops == []


def _sink_like(actor: CrewActor) -> CrewActor:
    """Another execution environment of the same x-sink: its own batch, the same table and transport."""
    return CrewActor(actor.settings, actor.decide, transport=actor.transport)


def test_a_sink_record_another_delivery_is_keeping_comes_back_when_that_claim_lapses(crew: Crew) -> None:
    """Not after x-sink's visibility timeout (half an hour): a second after the other claim expires.
    (A failure: x-sink forwards it to x-sump, a follow-up a second delivery would send again.)"""
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from asya.transport import MemoryTransport
    from asya_crew.crew import crew_hop

    transport = MemoryTransport()
    actor = _claiming_sink()
    actor = CrewActor(actor.settings, actor.decide, transport=transport, ledger=actor.ledger)
    body = json.dumps(_terminal("task-11", "failed"))
    keep = actor.decide(SQSRecord(sqs_record(f"asya-{NS}-x-sink", body)), actor.telemetry)
    assert actor.ledger.store is not None
    actor.ledger.store.save_inprogress(data=crew_hop("x-sink", keep), remaining_time_in_millis=30_000)
    assert len(crew.run(actor, body)["batchItemFailures"]) == 1
    assert crew.kept() == {}
    [(_, seconds)] = transport.returned[f"asya-{NS}-x-sink"]
    assert 29 <= seconds <= 32


def test_a_final_result_already_written_is_kept_as_it_was_and_the_task_still_ends(crew: Crew, tasks: TaskStore) -> None:
    """A first write whose answer was lost (botocore retries it), or a second delivery after a claim
    was freed or lapsed: the object is not written again, and the status is recorded all the same."""
    crew.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    tasks.create({"id": "t1"})
    first = terminal("succeeded", payload={"kept": "first"})
    crew.s3.put_object(Bucket=BUCKET, Key=f"results/{NS}/t1/succeeded.json", Body=json.dumps(first).encode())
    again = terminal("succeeded", payload={"kept": "again"})
    assert crew.run(actor(sink, "x-sink", sink.Sink([]).decide), again) == {"batchItemFailures": []}
    versions = crew.s3.list_object_versions(Bucket=BUCKET)["Versions"]
    assert len(versions) == 1
    assert crew.kept()[f"results/{NS}/t1/succeeded.json"]["payload"] == {"kept": "first"}
    task = tasks.get("t1")
    assert task is not None
    assert (task["status"], task["result"]) == ("succeeded", f"s3://{BUCKET}/results/{NS}/t1/succeeded.json")


def test_a_paused_envelope_is_kept_again_when_its_task_pauses_further_on(crew: Crew) -> None:
    paused = terminal("paused", payload={"step": 1})
    crew.run(actor(sink, "x-sink", sink.Sink([]).decide), paused)
    crew.run(actor(sink, "x-sink", sink.Sink([]).decide), {**paused, "payload": {"step": 2}})
    assert crew.kept()[f"results/{NS}/t1/paused.json"]["payload"] == {"step": 2}


class RacingS3:
    """S3 as it answers a conditional write racing another write of the same key: 409
    `ConditionalRequestConflict` `conflicts` times, which botocore does not retry, then as it is."""

    def __init__(self, s3: Any, conflicts: int) -> None:
        self.s3 = s3
        self.conflicts = conflicts

    def put_object(self, **request: Any) -> Any:
        from botocore.exceptions import ClientError

        if "IfNoneMatch" in request and self.conflicts:
            self.conflicts -= 1
            error = {"Error": {"Code": "ConditionalRequestConflict", "Message": "A conflicting operation"}}
            raise ClientError(error, "PutObject")  # type: ignore[arg-type]
        return self.s3.put_object(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.s3, name)


def test_a_conditional_write_that_raced_another_is_tried_again(crew: Crew) -> None:
    settings = CrewSettings.from_env("x-sink", {"ASYA_NAMESPACE": NS, "ASYA_RESULTS_BUCKET": BUCKET})
    racing = RacingS3(crew.s3, conflicts=2)
    actor = CrewActor(settings, sink.Sink([]).decide, s3=racing)  # type: ignore[arg-type]
    assert crew.run(actor, _terminal("task-13", "failed")) == {"batchItemFailures": []}
    assert racing.conflicts == 0
    assert "results/crew/task-13/failed.json" in crew.kept()
    still_racing = CrewActor(settings, sink.Sink([]).decide, s3=RacingS3(crew.s3, conflicts=3))  # type: ignore[arg-type]
    failed = crew.run(still_racing, _terminal("task-14", "failed"))
    assert len(failed["batchItemFailures"]) == 1, "three conflicts: the record returns to the queue"
