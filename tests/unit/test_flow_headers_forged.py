"""Flow headers a producer forged (docs/flows.md, "Safety"): an unreadable one, a program nested past
the bounds, a hostile decision, a program the mesh never deployed. Each ends before the handler runs,
or fails the task at once saying why: never a hang, a redelivery loop or a crash."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from asya.flow_program import digest
from asya.headers import FLOW_HEADER
from tests.support.flow_hops import REFINING, arriving, sent
from tests.support.flow_programs import compiled


@pytest.mark.parametrize(
    "header",
    [
        "not an object",
        {"program": {"nodes": [], "start": 0}, "at": 0},
        {"program": {"nodes": [{"call": "a", "next": 7}], "start": 0}, "at": 0},
        {"program": {"nodes": [{"call": "a", "next": 1}, {"return": True}], "start": 0}, "at": 1},
        {"program": {"nodes": [{"call": "a", "next": 1}, {"return": True}], "start": 0}, "at": -2},
        {"program": {"nodes": [{"call": "a", "next": 1}, {"huh": True}], "start": 0}, "at": 0},
        {
            "program": {"nodes": [{"call": "a", "next": 1}, {"while": ["var"], "max": "3", "body": 0, "exit": 0}]},
            "at": 0,
        },
    ],
)
def test_an_unreadable_flow_header_goes_to_x_sump_before_the_handler_runs(header: Any) -> None:
    called: list[Any] = []
    document = {"id": "t", "route": {"prev": [], "curr": "a", "next": []}, "headers": {FLOW_HEADER: header}}
    [(to, out)] = sent("a", called.append, {**document, "payload": {"n": 1}})
    assert (to, out["status"]["reason"]) == ("x-sump", "InvalidEnvelope")
    assert "x-asya-flow is not a flow program's place" in out["status"]["error"]["message"]
    assert called == [], "the handler does not run on an envelope that cannot go on"


def _forged(condition: list[Any]) -> dict[str, Any]:
    """A producer's envelope to actor `a` whose header program decides on `condition` after it, looping
    onto that decision while it holds (the review's forged programs, docs/flows.md "Safety")."""
    nodes = [{"call": "a", "next": 1}, {"if": condition, "then": 1, "else": 2}, {"return": True}]
    program = {"flow": "forged", "source": "forged", "start": 0, "nodes": nodes}
    header = {"program": {**program, "version": digest(program)}, "at": 0}
    return {"id": "t", "route": {"prev": [], "curr": "a", "next": []}, "headers": {FLOW_HEADER: header}, "payload": {}}


def test_a_forged_program_nested_past_the_bound_goes_to_x_sump_before_the_handler_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    condition: list[Any] = ["var"]
    for _ in range(700):
        condition = ["not", condition]
    called: list[Any] = []
    [(to, out)] = sent("a", called.append, _forged(condition))
    assert (to, out["status"]["reason"]) == ("x-sump", "InvalidEnvelope")
    assert "the condition is nested deeper than 32" in out["status"]["error"]["message"]
    assert called == []
    assert "the flow header is refused" in caplog.text


@pytest.mark.parametrize(
    ("condition", "why"),
    [
        (["math", "*", ["lit", "a"], ["lit", 10**13]], "arithmetic takes numbers, not a str"),
        (["fn", "round", ["lit", 1], ["neg", ["lit", 2_000_000]]], "round() takes at most 15 digits"),
        (["math", "%", ["at", ["var"], ["lit", "n"]], ["lit", 2]], "arithmetic takes numbers, not a str"),
    ],
    ids=["memory bomb", "slow round", "string formatting"],
)
def test_a_forged_programs_hostile_decision_fails_the_task_at_once_saying_why(
    condition: list[Any], why: str, caplog: pytest.LogCaptureFixture
) -> None:
    began = time.monotonic()
    [(to, out)] = sent("a", lambda _: {"n": "%01000000000000d"}, _forged(condition))
    assert time.monotonic() - began < 2.0, "no hang, no redelivery: the hop ends with the failure"
    assert (to, out["status"]["phase"], out["status"]["reason"]) == ("x-sink", "failed", "FlowError")
    assert why in out["payload"]["details"]["message"]
    assert "the flow program cannot go on" in caplog.text


def _rewritten(program: dict[str, Any]) -> dict[str, Any]:
    """A producer's copy of a deployed program with its loop's bound lifted."""
    return {**program, "nodes": [{**node, "max": 1000} if "while" in node else node for node in program["nodes"]]}


@pytest.mark.parametrize("forge", ["new version", "deployed version"])
def test_a_program_the_mesh_did_not_deploy_goes_to_x_sump_before_the_handler_runs(
    tmp_path: Path, forge: str, caplog: pytest.LogCaptureFixture
) -> None:
    program = compiled(tmp_path, REFINING)
    forged = _rewritten(program)
    forged["version"] = digest(forged) if forge == "new version" else program["version"]
    document = arriving(program, {"score": 0}, "draft")
    document["headers"][FLOW_HEADER]["program"] = forged
    called: list[Any] = []
    [(to, out)] = sent("draft", called.append, document, ASYA_FLOW_VERSIONS=program["version"])
    assert (to, out["status"]["reason"]) == ("x-sump", "UnknownProgram")
    why = "not one this mesh deployed" if forge == "new version" else f"not version '{program['version']}' as deployed"
    assert why in out["status"]["error"]["message"]
    assert called == [], "the handler does not run for a program nobody deployed"
    assert "the flow header is refused" in caplog.text


def test_a_sidecar_the_mesh_gave_no_program_runs_none(tmp_path: Path) -> None:
    document = arriving(compiled(tmp_path, REFINING), {"score": 0}, "draft")
    [(to, out)] = sent("draft", lambda p: p, document, ASYA_FLOW_VERSIONS="")
    assert (to, out["status"]["reason"]) == ("x-sump", "UnknownProgram")
