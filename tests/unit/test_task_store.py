"""Task records only move forward (docs/status.md): stale updates are dropped, terminal statuses stay,
progress never decreases, fan-out roots end with their last branch, and the backstop fails late tasks."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest

from asya.dedup import Claim, HopClaim
from asya.task_record import Report, progress_of
from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.task_error import TaskError


@pytest.fixture
def store(task_store: TaskStore) -> TaskStore:
    return task_store


def running(task_id: str, progress: float, actor: str = "a", **fields: Any) -> Report:
    route = {"prev": [], "curr": actor, "next": []}
    return Report(task_id=task_id, actor=actor, route=route, phase="processing", progress=progress, **fields)


def test_progress_follows_the_spec_formula() -> None:
    assert progress_of({"prev": [], "curr": "a", "next": ["b", "c"]}) == 0
    assert progress_of({"prev": ["a"], "curr": "b", "next": ["c"]}) == pytest.approx(33.33)
    assert progress_of({"prev": ["a", "b", "c"], "curr": "", "next": []}) == 100


def test_running_reports_never_lower_progress(store: TaskStore) -> None:
    store.create({"id": "t1"})
    assert store.report(running("t1", 50))
    assert not store.report(running("t1", 25))  # a late report from an earlier hop
    assert store.report(running("t1", 50))  # repeated running is idempotent
    task = store.get("t1")
    assert task is not None
    assert (task["status"], task["progress"]) == ("running", 50)


def test_terminal_status_is_never_overwritten(store: TaskStore) -> None:
    store.create({"id": "t1"})
    store.finish("t1", "t1", "succeeded", {"result": "s3://bucket/results/t1/succeeded.json"})
    store.finish("t1", "t1", "failed", {"reason": "Late"})
    assert not store.report(running("t1", 99))
    task = store.get("t1")
    assert task is not None
    assert (task["status"], task["progress"], task["result"]) == (
        "succeeded",
        100,
        "s3://bucket/results/t1/succeeded.json",
    )
    assert task["expires_at"] > dt.datetime.now(dt.UTC).timestamp()


def test_root_ends_only_when_every_branch_ended(store: TaskStore) -> None:
    store.create({"id": "root"})
    store.register_branches("root", ["c1", "c2"])
    store.finish("root", "root", "succeeded", {"result": "s3://b/root"})
    store.finish("c1", "root", "succeeded", {}, parent_id="root")
    root = store.get("root")
    assert root is not None
    assert root["status"] == "pending"
    store.finish("c1", "root", "succeeded", {}, parent_id="root")  # a redelivered x-sink counts once
    store.finish("c2", "root", "failed", {"reason": "HandlerError"}, parent_id="root")
    root = store.get("root")
    assert root is not None
    assert (root["status"], root["n_succeeded"], root["n_failed"], root["result"]) == ("failed", 2, 1, "s3://b/root")
    child = store.get("c2")
    assert child is not None
    assert (child["status"], child["parent_id"], child["root_id"]) == ("failed", "root", "root")


def test_a_count_that_would_end_the_root_counts_only_if_the_root_is_as_it_was_seen(store: TaskStore) -> None:
    """The batch saw the root wait for c2 alone, but a nested fan-out has since registered c3: the
    write that would count c2 and end the root is refused, and c2 is counted without ending it."""
    store.create({"id": "root"})
    store.register_branches("root", ["c1", "c2"])
    store.finish("c1", "root", "succeeded", {}, parent_id="root")
    seen = store._close_branch("root", {"root": "succeeded"}, {"outcome": "succeeded", "result": "s3://b/root"})
    assert seen is not None
    store.register_branches("root", ["c3"])
    store.count("root", {"c2": "succeeded"}, seen)
    root = store.get("root")
    assert root is not None
    assert (root["status"], sorted(root["done_ids"])) == ("pending", ["c1", "c2", "root"])
    store.count("root", {"c3": "failed"}, root)
    root = store.get("root")
    assert root is not None
    assert (root["status"], root["n_succeeded"], root["n_failed"], root["result"]) == ("failed", 3, 1, "s3://b/root")


def test_a_count_of_several_counts_those_not_counted_before(store: TaskStore) -> None:
    store.create({"id": "root"})
    store.register_branches("root", ["c1", "c2", "c3"])
    store.count("root", {"c1": "succeeded"})
    store.count("root", {"c1": "succeeded", "c2": "canceled", "c3": "succeeded"})  # c1 redelivered
    store.count("root", {"root": "succeeded"})
    root = store.get("root")
    assert root is not None
    assert (root["status"], root["n_succeeded"], root["n_canceled"]) == ("canceled", 3, 1)


def test_cancel_cascades_to_registered_branches(store: TaskStore) -> None:
    store.create({"id": "root"})
    store.register_branches("root", ["c1"])
    store.report(running("c1", 50, parent_id="root", root_id="root"))
    canceled = store.cancel("root")
    assert canceled is not None
    assert canceled["status"] == "canceled"
    child = store.get("c1")
    assert child is not None
    assert child["status"] == "canceled"
    assert store.cancel("root") == store.get("root")  # idempotent
    assert store.cancel("unknown") is None


def test_pause_stops_the_deadline_clock_and_resume_restarts_it(store: TaskStore) -> None:
    now = dt.datetime.now(dt.UTC)
    store.create({"id": "t1", "deadline_at": (now + dt.timedelta(seconds=60)).isoformat()})
    paused = store.pause("t1", {"prompt": "ok?"}, now)
    assert paused is not None
    assert paused["status"] == "paused"
    assert "deadline_at" not in paused
    assert not store.report(running("t1", 10))  # a paused task does not go back to running by a report
    assert store.expire(now + dt.timedelta(hours=1)) == []  # paused: not swept
    later = now + dt.timedelta(hours=1)
    resumed = store.resume(store.get("t1") or {}, later)
    assert resumed is not None
    assert resumed["status"] == "running"
    deadline = dt.datetime.fromisoformat(resumed["deadline_at"])
    assert dt.timedelta(seconds=59) <= deadline - later <= dt.timedelta(seconds=60)
    assert store.resume(paused, later) is None  # read while paused, but not paused any more


def test_backstop_fails_open_tasks_past_their_deadline(store: TaskStore) -> None:
    now = dt.datetime.now(dt.UTC)
    store.create({"id": "late", "deadline_at": (now - dt.timedelta(seconds=1)).isoformat()})
    store.create({"id": "early", "deadline_at": (now + dt.timedelta(hours=1)).isoformat()})
    assert store.expire(now) == ["late"]
    late = store.get("late")
    assert late is not None
    assert (late["status"], late["reason"]) == ("failed", "Timeout")
    assert store.expire(now) == []  # ended tasks leave the index


def test_statuses_are_read_in_one_batch(store: TaskStore) -> None:
    for index in range(150):
        store.create({"id": f"t{index}"})
    store.cancel("t7")
    statuses = store.statuses([f"t{index}" for index in range(150)] + ["unknown"])
    assert len(statuses) == 150
    assert statuses["t7"] == "canceled"


def test_creating_a_task_answers_with_the_record_a_read_would_return(store: TaskStore) -> None:
    """The gateway answers a create from this, without reading the task back."""
    written = store.create({"id": "t1", "flow": "triage", "deadline_at": "2026-11-24T10:00:00Z", "attempt": 1})
    assert written is not None
    assert written == store.get("t1")
    assert store.create({"id": "t1"}) is None  # the id is taken: nothing overwritten
    assert store.get("t1") == written


def test_the_gateway_creates_a_task_without_reading_it_back(gateway: TaskService) -> None:
    gateway.sqs.create_queue(QueueName="asya-n-b")  # every actor a route names must have its queue
    reads: list[str] = []
    gateway.tasks.client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: reads.append("GetItem"))
    created = gateway.create(payload={"x": 1}, route=["a", "b"])
    assert reads == []
    assert created.task is not None
    assert (created.task["id"], created.task["status"], created.task["actor"]) == (created.task_id, "pending", "a")
    assert created.task == gateway.view(created.task_id)


def test_a_task_id_already_taken_is_refused_and_nothing_is_sent(
    gateway: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = gateway.sqs.get_queue_url(QueueName="asya-n-a")["QueueUrl"]
    taken = uuid.uuid4()
    monkeypatch.setattr("asya_gateway.service.uuid.uuid4", lambda: taken)
    gateway.create(payload={}, route=["a"])
    with pytest.raises(TaskError) as refused:
        gateway.create(payload={}, route=["a"])
    assert refused.value.status == 409
    assert len(gateway.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])) == 1


def _ms(seconds_from_now: float) -> int:
    return int((dt.datetime.now(dt.UTC).timestamp() + seconds_from_now) * 1000)


def test_a_hop_is_claimed_once_while_held_again_once_its_holder_died_and_never_behind_the_task(
    store: TaskStore,
) -> None:
    store.create({"id": "t1"})
    assert store.claim_hop(running("t1", 0), 0, _ms(60)) == HopClaim(Claim.NEW)
    held = store.claim_hop(running("t1", 0), 0, _ms(60))
    assert held.claim is Claim.IN_PROGRESS
    assert held.held_until is not None
    assert held.held_until > _ms(50)
    assert store.claim_hop(running("t1", 50, actor="b"), 1, _ms(-1)).claim is Claim.NEW  # the next hop
    assert store.claim_hop(running("t1", 0), 0, _ms(60)).claim is Claim.DUPLICATE  # behind the task
    assert store.claim_hop(running("t1", 50, actor="b", attempt=2), 1, _ms(60)).claim is Claim.NEW  # a retry
    store.create({"id": "t2"})
    assert store.claim_hop(running("t2", 0), 0, _ms(-1)).claim is Claim.NEW  # its invocation ended at once
    assert store.claim_hop(running("t2", 0), 0, _ms(60)).claim is Claim.NEW  # so a redelivery runs it again
    task = store.get("t1")
    assert task is not None
    assert (task["status"], task["actor"], task["hop_position"], task["hop_attempt"]) == ("running", "b", 1, 2)


def test_a_claims_lease_is_renewed_only_while_it_is_still_the_one_its_delivery_wrote(store: TaskStore) -> None:
    """A container hop's claim is a lease its heartbeat renews (`asya.claim_leases`): a renewal never
    takes over the claim another delivery made once the lease had lapsed, nor one on a later hop."""
    store.create({"id": "t1"})
    mine, attempt = _ms(2), running("t1", 0).attempt
    assert store.claim_hop(running("t1", 0), 0, mine).claim is Claim.NEW
    assert store.renew_claim("t1", 0, attempt, mine, _ms(30))
    assert store.claim_hop(running("t1", 0), 0, _ms(60)).claim is Claim.IN_PROGRESS  # held on, by the renewal
    assert not store.renew_claim("t1", 0, attempt, mine, _ms(90)), "renewed from a hold it no longer has"
    store.create({"id": "t2"})
    store.claim_hop(running("t2", 0), 0, lapsed := _ms(-1))
    theirs = _ms(60)
    assert store.claim_hop(running("t2", 0), 0, theirs).claim is Claim.NEW  # a redelivery took it
    assert not store.renew_claim("t2", 0, attempt, lapsed, _ms(90))
    next_hop = _ms(60)
    assert store.claim_hop(running("t2", 50, actor="b"), 1, next_hop).claim is Claim.NEW
    assert not store.renew_claim("t2", 0, attempt, theirs, _ms(90))  # the task moved on
    task = store.get("t2")
    assert task is not None
    assert (task["hop_position"], task["hop_held_until"]) == (1, next_hop)


@pytest.mark.parametrize(("stop", "status"), [("cancel", "canceled"), ("pause", "paused")])
def test_a_hop_of_a_stopped_task_is_not_claimed(store: TaskStore, stop: str, status: str) -> None:
    store.create({"id": "t1"})
    if stop == "cancel":
        store.cancel("t1")
    else:
        store.pause("t1", {"prompt": "?"}, dt.datetime.now(dt.UTC))
    assert store.claim_hop(running("t1", 0), 0, _ms(60)) == HopClaim(Claim.HALTED, halted=status)
    task = store.get("t1")
    assert task is not None
    assert task["status"] == status


def test_a_hop_further_on_is_reported_even_where_a_loop_lowers_the_progress(store: TaskStore) -> None:
    """A flow program's loop lengthens the route ahead: refine → evaluate → refine again reads 2/3 then
    3/5. The point written at the later hop (every-point's `received`, a Spark batch's start) still
    shows where the task is; a late point from a hop behind the last one claimed still does not."""
    store.create({"id": "t1"})
    at_evaluate = {"prev": ["draft", "refine"], "curr": "evaluate", "next": []}
    report = Report("t1", "evaluate", at_evaluate, "processing", progress_of(at_evaluate))
    assert store.claim_hop(report, 2, _ms(60)).claim is Claim.NEW
    again = {"prev": ["draft", "refine", "evaluate"], "curr": "refine", "next": ["evaluate"]}
    assert progress_of(again) < progress_of(at_evaluate)
    assert store.report(Report("t1", "refine", again, "processing", progress_of(again)), hop=3)
    task = store.get("t1")
    assert task is not None
    assert (task["actor"], task["progress"]) == ("refine", progress_of(again))
    assert [hop[0] for hop in task["hops"]] == [2, 3]
    behind = {"prev": ["draft"], "curr": "refine", "next": ["evaluate"]}
    assert not store.report(Report("t1", "refine", behind, "received", progress_of(behind)))
