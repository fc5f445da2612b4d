"""The testing API a project's tests use (`asya_local.testing`): a mesh file run in one process gives
each task's result, its hops, its branches and join, a program's decisions, retries with their waits
skipped, refusals as the API answers them, and the actors' variables and secrets as deployed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from asya_local.testing import HarnessError, MeshHarness, TaskError

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"

MESH = """\
namespace: graded
actors:
  score: {handler: grading.score, code: ., environment: {PASS_MARK: "5"}}
  accept: {handler: grading.accept, code: .}
  reject: {handler: grading.reject, code: .}
  flaky:
    handler: grading.flaky
    code: .
    resiliency:
      policies:
        default: {max_attempts: 3, backoff: constant, initial_delay: 30s}
  signed: {handler: grading.signed, code: ., secrets: {SIGNING_KEY: graded/signing-key}}
flows:
  grade: {program: programs.grade}
  parity: {program: programs.parity}
  parity-first: {program: programs.parity_first}
  retried: {route: [flaky]}
  sign: {route: [signed]}
"""
PROGRAMS = """\
def grade(p):
    p = score(p)
    if p["passed"]:
        p = accept(p)
    else:
        p = reject(p)
    return p


def parity(p):
    p = score(p)
    if p["n"] % 2 == 0:
        p = accept(p)
    return p


def parity_first(p):
    if p["n"] % 2 == 0:
        p = accept(p)
    else:
        p = reject(p)
    return p
"""
ACTORS = """\
import os

import asya.startup

ATTEMPTS = {}


def score(p):
    return {**p, "passed": p["marks"] >= int(os.environ["PASS_MARK"])}


def accept(p):
    return {**p, "grade": "accepted"}


def reject(p):
    return {**p, "grade": "rejected"}


def flaky(p):
    ATTEMPTS[p["key"]] = ATTEMPTS.get(p["key"], 0) + 1
    if ATTEMPTS[p["key"]] < p["fail_times"] + 1:
        raise ConnectionError("the model server is still starting")
    return {**p, "attempts": ATTEMPTS[p["key"]]}


def signed(p):
    return {**p, "signed_with": asya.startup.secret("SIGNING_KEY")[:4]}
"""


SECRETS = {"graded/signing-key": "k3y-value"}


@pytest.fixture
def graded(tmp_path: Path) -> Path:
    (tmp_path / "programs.py").write_text(PROGRAMS)
    (tmp_path / "grading.py").write_text(ACTORS)
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(MESH)
    return mesh


def test_a_fan_out_and_its_join_end_as_one_result_with_every_branch_seen() -> None:
    reviews = ["Great kettle, love it", "Arrived broken, terrible, awful", "ok"]
    with MeshHarness(REVIEWS) as mesh:
        run = mesh.run("summarise-reviews", {"product": "kettle", "reviews": reviews})
    assert run.succeeded, run.error
    assert run.output["reviews"] == 3  # the join's one result, from every branch
    assert run.actors.count("score") == 3  # each branch scored apart
    assert run.actors[0] == "split"
    assert run.actors[-1] == "summarise"


def test_a_program_takes_the_branch_its_payload_decides(graded: Path) -> None:
    with MeshHarness(graded, secrets=SECRETS) as mesh:
        passed = mesh.run("grade", {"marks": 7})
        failed = mesh.run("grade", {"marks": 2})
    assert (passed.output["grade"], passed.actors) == ("accepted", ["score", "accept"])
    assert (failed.output["grade"], failed.actors) == ("rejected", ["score", "reject"])


def test_retries_wait_as_the_policy_says_without_the_test_waiting(graded: Path) -> None:
    started = time.monotonic()
    with MeshHarness(graded, secrets=SECRETS) as mesh:
        run = mesh.run("retried", {"key": "twice", "fail_times": 2})
        skipped = mesh.clock.skipped_seconds
    assert run.succeeded
    assert run.output["attempts"] == 3
    assert run.actors == ["flaky", "flaky", "flaky"]
    assert skipped > 55  # two waits of 30 s, less what the test itself took, passed on the queues' clock
    assert time.monotonic() - started < skipped


def test_the_last_attempt_failing_fails_the_task_with_the_handlers_error(graded: Path) -> None:
    with MeshHarness(graded, secrets=SECRETS) as mesh:
        run = mesh.run("retried", {"key": "always", "fail_times": 5})
    assert run.status == "failed"
    assert run.error["type"] == "ConnectionError"
    assert run.actors == ["flaky", "flaky", "flaky"]  # max_attempts


HOSTILE = "%01000000000000d"  # `% 2` would format it into a terabyte (docs/flows.md, "Safety")


def test_a_hostile_value_for_a_programs_condition_fails_the_task_once_saying_why(graded: Path) -> None:
    with MeshHarness(graded, secrets=SECRETS) as mesh:
        run = mesh.run("parity", {"marks": 7, "n": HOSTILE})
        with pytest.raises(TaskError, match="arithmetic takes numbers, not a str") as refused:
            mesh.run("parity-first", {"n": HOSTILE})
    assert run.status == "failed"
    assert run.task["reason"] == "FlowError"
    assert "p['n'] % 2 == 0: arithmetic takes numbers, not a str" in run.error["message"]
    assert run.actors == ["score"], "the handler ran once: no redelivery"
    assert not run.retried
    assert refused.value.status == 400, "the gateway refuses it before the task starts"


def test_an_input_the_flow_refuses_is_the_apis_answer() -> None:
    with MeshHarness(REVIEWS) as mesh, pytest.raises(TaskError, match="input schema") as refused:
        mesh.run("triage-reviews", {"product": "kettle"})
    assert refused.value.status == 400


def test_secrets_come_from_the_test_and_a_missing_one_is_named(graded: Path) -> None:
    with MeshHarness(graded, secrets=SECRETS) as mesh:
        run = mesh.run("sign", {})
    assert run.output == {"signed_with": "k3y-"}
    with pytest.raises(HarnessError, match=r"actors\.signed\.secrets\.SIGNING_KEY: no value for 'graded/signing-key'"):
        MeshHarness(graded).__enter__()


def test_a_test_overrides_an_actors_variables(graded: Path) -> None:
    with MeshHarness(graded, secrets=SECRETS, environment={"score": {"PASS_MARK": "1"}}) as mesh:
        run = mesh.run("grade", {"marks": 2})
    assert run.output["grade"] == "accepted"
