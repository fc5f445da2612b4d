"""Flows written as programs (docs/flows.md) on the local stack, as a user sees them through the
gateway: each construct alone and nested, where a task went (its hop history: exactly the actors the
program called, a decision costing no hop), what it returned and why it failed; pause and resume,
cancel, retries, a deadline, the claim check and an x-sump redrive in the middle of a program.

Every task is created before any is waited for (`started`): they run side by side, so the module
waits about as long as its slowest task, not the sum of them all.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from asya_local.endpoint.process import LocalEndpoint
from asya_local.gateway_client import GatewayClient
from tests.support.stack import RunningMesh, running

pytestmark = pytest.mark.integration
FLOWS = Path(__file__).resolve().parent / "flows"
WAIT_SECONDS = 60
BLOB = "claim-checked " * 1_500  # ~21 KB: over the mesh's 1,024-byte threshold at every hop

# what each task is created with: the flow, its input, and for some a timeout of its own (seconds)
TASKS: dict[str, dict[str, Any]] = {
    "doubtful": {"flow": "branching", "payload": {"given_confidence": 0.2}},
    "confident": {"flow": "branching", "payload": {"given_confidence": 0.9}},
    "urgent": {"flow": "branching", "payload": {"given_confidence": 0.9, "urgent": True}},
    "converging": {"flow": "refining", "payload": {"score": 0.0, "step": 0.3}},
    "endless": {"flow": "refining", "payload": {"score": 0.0, "step": 0.1}},
    "caught": {"flow": "guarded", "payload": {"fail_in_round": 1}},
    "parallel": {"flow": "side-by-side", "payload": {}},
    "nested": {"flow": "nested", "payload": {"step": 0.3}},
    "nested-caught": {"flow": "nested", "payload": {"step": 0.3, "fail_in_round": 2}},
    "approved": {"flow": "reviewed", "payload": {"score": 0.2}},
    "refused": {"flow": "reviewed", "payload": {"score": 0.2}},
    "approved-large": {"flow": "reviewed", "payload": {"score": 0.2, "blob": BLOB}},
    "retried": {"flow": "retried", "payload": {"succeed_at": 2}},
    "exhausted": {"flow": "retried", "payload": {"succeed_at": 9}},
    "canceled": {"flow": "long-loop", "payload": {"goal": 100, "sleep": 0.3}},
    "overdue": {"flow": "hurried", "payload": {"goal": 100, "sleep": 0.3}},
    "large": {"flow": "refining", "payload": {"score": 0.0, "step": 0.3, "blob": BLOB}},
    "redriven": {"flow": "refining", "payload": {"score": 0.0, "step": 0.3}},  # and a crash marker (`started`)
}


@pytest.fixture(scope="module")
def flows(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, FLOWS / "mesh.yaml") as mesh:
        yield mesh


@pytest.fixture(scope="module")
def gateway(flows: RunningMesh) -> GatewayClient:
    return GatewayClient(flows.stack.gateway_url or "", flows.stack.api_key)


@pytest.fixture(scope="module")
def started(gateway: GatewayClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every task of the module, created at once: name (of `TASKS`) → task id."""
    marker = str(tmp_path_factory.mktemp("evaluate") / "crashed")
    redriven = TASKS["redriven"]
    bodies = {**TASKS, "redriven": {**redriven, "payload": {**redriven["payload"], "crash_marker": marker}}}
    return {name: gateway.create_task(body)["id"] for name, body in bodies.items()}


def ended(gateway: GatewayClient, flows: RunningMesh, task_id: str) -> dict[str, Any]:
    """The task once it ended (its `output` with it)."""
    task = gateway.task(task_id)
    assert task is not None
    task = gateway.wait(task, time.monotonic() + WAIT_SECONDS)
    assert task["terminal"], f"{task_id} still {task['status']} after {WAIT_SECONDS} s\n{flows.errors()}"
    return task


def reached(gateway: GatewayClient, task_id: str, done: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    """The task as soon as `done(task)` holds."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        task = gateway.task(task_id)
        assert task is not None
        if done(task):
            return task
        time.sleep(0.2)
    raise AssertionError(f"{task_id} never {what}: {gateway.task(task_id)}")


def called(task: dict[str, Any]) -> list[str]:
    """The actor of each hop in the task's history, in order: an attempt a retry or a redrive made is a
    hop of its own, and a person's wait at x-pause is one too."""
    return [hop["actor"] for hop in task.get("hops", [])]


def succeeded(task: dict[str, Any], path: list[str], hops: list[str] | None = None) -> dict[str, Any]:
    """The task's output, having checked that it succeeded at 100 % after calling exactly `path` (the
    route's `prev`), in exactly those hops, or in `hops` where retries or a redrive added some."""
    assert (task["status"], task["progress"]) == ("succeeded", 100), task
    assert task["route"]["prev"] == path
    assert called(task) == (path if hops is None else hops), "no hop but the actors the program called"
    output: dict[str, Any] = task["output"]
    return output


def loop_line(function: str) -> int:
    """The line of the first `while` of `function` in the flows' programs.py: where a loop's error points."""
    tree = ast.parse((FLOWS / "programs.py").read_text())
    definition = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function)
    return next(node.lineno for node in ast.walk(definition) if isinstance(node, ast.While))


def test_a_branch_goes_each_way_and_a_return_in_the_middle_ends_the_task(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    doubtful = succeeded(ended(gateway, flows, started["doubtful"]), ["classify", "escalate"])
    assert (doubtful["escalated"], "accepted" in doubtful) == (True, False)
    confident = succeeded(ended(gateway, flows, started["confident"]), ["classify", "accept"])
    assert (confident["accepted"], "escalated" in confident) == (True, False)
    urgent = succeeded(ended(gateway, flows, started["urgent"]), ["classify"])
    assert urgent["trail"] == ["classify"]


def test_a_loop_ends_by_its_condition(gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]) -> None:
    rounds = ["refine", "evaluate"] * 3  # 0.3, 0.6, 0.9: the third round's score ends it
    output = succeeded(ended(gateway, flows, started["converging"]), ["draft", *rounds])
    assert (output["rounds"], round(output["score"], 2)) == (3, 0.9)


def test_progress_never_goes_back_while_a_loop_goes_round(gateway: GatewayClient) -> None:
    """Each round of a loop of two actors sets the route ahead back to the shortest way out of the
    loop: a watcher still sees the task's progress only go up (docs/status.md)."""
    created = gateway.create_task({"flow": "refining", "payload": {"score": 0.0, "step": 0.3, "sleep": 0.4}})
    progress = [data["progress"] for kind, data in gateway.follow(created["id"]) if kind == "status"]
    assert len(progress) >= 4, progress
    assert progress == sorted(progress), progress
    assert progress[-1] == 100


def test_a_loop_past_its_bound_fails_the_task_naming_the_loop(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, flows, started["endless"])
    assert (task["status"], task["reason"]) == ("failed", "LoopLimit")
    message = task["error"]["message"]
    assert f"programs.py line {loop_line('refining')}" in message
    assert "went round 3 times (max_iterations)" in message
    assert called(task) == ["draft", *["refine", "evaluate"] * 3], "no fourth round"


def test_an_exception_is_caught_three_actors_later_with_the_failing_actors_input(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, flows, started["caught"])
    output = succeeded(task, ["draft", "refine", "evaluate", "fallback", "accept"])
    assert output["trail"] == ["draft", "refine", "fallback", "accept"], "evaluate's input went on"
    caught = output["caught"]  # what the except's actor is told
    assert (caught["actor"], caught["type"]) == ("evaluate", "ValueError")
    assert "gives up in round 1" in caught["message"]


def test_parallel_branches_are_joined_into_the_joins_result(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, flows, started["parallel"])
    assert (task["status"], task["progress"]) == ("succeeded", 100), task
    output = task["output"]
    assert output["candidates"] == ["a", "b"], "one of each branch, in order"
    assert (output["answer"], output["trail"]) == ("b", ["classify", "model-b", "escalate", "pick"])


def test_if_inside_while_inside_try(gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]) -> None:
    # rounds 1 and 3 are odd: `continue` skips evaluate; the score 0.9 ends the loop, then accept
    path = ["draft", "refine", "refine", "evaluate", "refine", "accept"]
    assert succeeded(ended(gateway, flows, started["nested"]), path)["rounds"] == 3
    # evaluate fails in round 2: the except leaves the loop and returns before accept
    caught = succeeded(ended(gateway, flows, started["nested-caught"]), [*path[:4], "fallback"])
    assert caught["trail"] == ["draft", "refine", "refine", "fallback"]


def test_the_decision_after_a_pause_reads_the_resumed_payload(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    decisions = {"approved": True, "refused": False, "approved-large": True}
    for name, given in decisions.items():
        reached(gateway, started[name], lambda task: task["status"] == "paused", "paused")
        gateway.resume(started[name], {"approved": given})
    approved = ended(gateway, flows, started["approved"])
    assert succeeded(approved, ["draft", "x-pause", "accept"])["accepted"] is True
    assert [hop["waiting"] for hop in approved["hops"]] == [False, True, False]
    refused = succeeded(ended(gateway, flows, started["refused"]), ["draft", "x-pause"])
    assert (refused["approved"], "accepted" in refused) == (False, False)
    # resumed with its payload in S3 (over the claim-check threshold): decided on all the same
    large = ended(gateway, flows, started["approved-large"])
    assert (large["status"], large.get("error")) == ("succeeded", None)
    assert large["route"]["prev"] == ["draft", "x-pause", "accept"]
    assert flows.result(large["id"])["envelope"]["payload"]["blob"] == BLOB


def test_a_retried_actor_inside_try_is_caught_only_once_its_retries_are_used_up(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    retried = ended(gateway, flows, started["retried"])
    path = ["draft", "flaky", "accept"]
    assert succeeded(retried, path, ["draft", "flaky", "flaky", "accept"])["trail"] == path
    assert [hop["attempt"] for hop in retried["hops"]] == [1, 1, 2, 1]
    exhausted = ended(gateway, flows, started["exhausted"])
    output = succeeded(
        exhausted, ["draft", "flaky", "fallback", "accept"], ["draft", *["flaky"] * 3, "fallback", "accept"]
    )
    assert [hop["attempt"] for hop in exhausted["hops"]] == [1, 1, 2, 3, 1, 1]
    assert output["trail"] == ["draft", "fallback", "accept"]
    assert (output["caught"]["type"], output["caught"]["reason"]) == ("ConnectionError", "PolicyExhausted")


def test_a_task_canceled_in_a_loop_runs_no_further_actor(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task_id = started["canceled"]
    before = len(called(reached(gateway, task_id, lambda task: len(called(task)) >= 3, "went round twice")))
    assert gateway.cancel(task_id)["status"] == "canceled"
    kept = flows.result(task_id)
    assert kept["outcome"] == "canceled"
    time.sleep(1)  # an actor run after the cancel would be in the history by now
    after = called(ended(gateway, flows, task_id))
    assert after == ["draft"] + ["refine"] * (len(after) - 1)
    assert len(after) <= before + 1, "only the round running when it was canceled finished"
    assert kept["envelope"]["payload"]["rounds"] == len(after) - 1, "the last round's output went nowhere"


def test_a_deadline_reached_inside_a_loop_fails_the_task(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, flows, started["overdue"])
    assert task["status"] == "failed"
    assert task["reason"] in ("Timeout", "HandlerTimeout"), "between two rounds, or during one"
    rounds = len(called(task)) - 1
    assert 1 <= rounds <= 9, "the flow's 2 s of 0.3 s rounds"
    assert called(task) == ["draft", *["refine"] * rounds]


def test_a_payload_over_the_claim_check_threshold_comes_out_of_a_loop_whole(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, flows, started["large"])
    assert (task["status"], task["progress"]) == ("succeeded", 100), task
    assert called(task) == ["draft", *["refine", "evaluate"] * 3]
    payload = flows.result(task["id"])["envelope"]["payload"]
    assert payload["blob"] == BLOB
    assert (payload["rounds"], payload["trail"]) == (3, ["draft", *["refine", "evaluate"] * 3])


def test_an_envelope_redriven_from_x_sump_goes_on_under_its_program(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    task_id = started["redriven"]
    crashed = ended(gateway, flows, task_id)
    assert (crashed["status"], crashed["reason"]) == ("failed", "RuntimeCrash"), crashed
    entry = reached_sump(gateway, task_id)
    assert entry["at"] == "evaluate"
    redriven, _ = gateway.redrive(task_id, {})
    assert redriven
    task = gateway.wait(dict(gateway.task(task_id) or {}), time.monotonic() + WAIT_SECONDS)
    path = ["draft", *["refine", "evaluate"] * 3]
    output = succeeded(task, path, [*path[:3], "evaluate", *path[3:]])  # crashed, then redriven
    assert output["trail"] == path


def reached_sump(gateway: GatewayClient, envelope_id: str) -> dict[str, Any]:
    """x-sump's entry for the envelope, once it has kept it."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = [entry for entry in gateway.sump(actor="evaluate") if entry["id"] == envelope_id]
        if found:
            return found[0]
        time.sleep(0.3)
    raise AssertionError(f"x-sump never listed {envelope_id}")


def test_every_task_records_the_version_of_the_program_it_ran(
    gateway: GatewayClient, flows: RunningMesh, started: dict[str, str]
) -> None:
    programs = flows.stack.mesh.programs
    for name, task_id in started.items():
        version = programs[TASKS[name]["flow"]]["version"]
        assert flows.record(task_id)["program_version"] == version, name
