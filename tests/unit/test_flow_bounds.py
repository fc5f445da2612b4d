"""The evaluator's bounds (`asya.flow_program`, docs/flows.md "Safety"): each hostile condition of the
security review is refused at once with a `FlowError` saying why, never a hang or an out-of-memory; a
program too deep or too large is refused when it is compiled and when a header brings it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from asya.flow_expressions import MAX_DEPTH, FlowError, check_condition
from asya.flow_program import Call, Program
from asya_cdk.flow_compiler import FlowCompileError
from tests.support.flow_programs import compiled

OVER_BUDGET = "the decision took over 200,000 steps"


def _deciding(condition: list[Any]) -> Program:
    """A forged program: one actor, then a decision on `condition` that loops onto itself while true."""
    nodes = [{"call": "victim", "next": 1}, {"if": condition, "then": 1, "else": 2}, {"return": True}]
    return Program({"flow": "forged", "source": "forged", "start": 0, "nodes": nodes})


def _refusal(program: Program, payload: Any) -> str:
    """Why `program` refuses to decide on `payload`, timed: a refusal costs next to nothing."""
    began = time.monotonic()
    with pytest.raises(FlowError) as refused:
        program.advance(1, payload, {})
    assert time.monotonic() - began < 1.0, "refused at once, not after the work"
    return str(refused.value)


def _written(tmp_path: Path, condition: str) -> Program:
    return Program(
        compiled(tmp_path, f"def flow(p):\n    p = classify(p)\n    if {condition}:\n        p = accept(p)\n")
    )


@pytest.mark.parametrize(
    ("condition", "payload", "why"),
    [
        ('p["n"] % 2 == 0', {"n": "%01000000000000d"}, "arithmetic takes numbers, not a str"),
        ('"a" * 10000000000000', {}, "arithmetic takes numbers, not a str"),
        ('p["s"] + p["s"]', {"s": "x"}, "arithmetic takes numbers, not a str"),
        ('p["n"] * 3', {"n": [1]}, "arithmetic takes numbers, not a list"),
        ('p["n"] + 1', {"n": True}, "arithmetic takes numbers, not a bool"),
        ('p["n"] * p["n"] > 0', {"n": 2**40}, "a number beyond ±2**53"),
        ('p["n"] // 1 > 0', {"n": 10**400}, "a number beyond ±2**53"),
        ('abs(p["n"])', {"n": -(10**20)}, "a number beyond ±2**53"),
        ("round(1, -2000000)", {}, "round() takes at most 15 digits either way, not -2000000"),
        ('round(p["f"], 20)', {"f": 0.5}, "round() takes at most 15 digits either way, not 20"),
        ('p["l"] == p["l"]', {"l": list(range(10**6))}, OVER_BUDGET),
        ('p["a"] == p["b"]', {"a": [[0] * 1000] * 300, "b": [[0] * 1000] * 300}, OVER_BUDGET),
        ('"x" in p["s"]', {"s": "y" * 300_000}, OVER_BUDGET),
    ],
)
def test_a_hostile_condition_is_refused_at_once_saying_why(
    tmp_path: Path, condition: str, payload: Any, why: str
) -> None:
    program = _written(tmp_path, condition)
    [node] = [index for index, node in enumerate(program.nodes) if "if" in node]
    with pytest.raises(FlowError) as refused:
        program.advance(node, payload, {})
    assert str(refused.value).endswith(f": {why}")


def test_what_is_within_the_bounds_still_computes(tmp_path: Path) -> None:
    condition = 'round(p["f"] * 4503599627370496 / 3, 15) > 0 and p["n"] % 2 == 0 and len(p["l"]) > 0 and "k" in p'
    program = _written(tmp_path, condition)
    [node] = [index for index, node in enumerate(program.nodes) if "if" in node]
    large = list(range(10**6))  # read in one step each: `len`, a key of an object, a subscript
    assert isinstance(program.advance(node, {"f": 1.0, "n": 4, "l": large, "k": 1}, {}), Call)


def test_a_condition_that_loops_onto_itself_runs_out_of_its_budget() -> None:
    program = _deciding(["cmp", "==", ["at", ["var"], ["lit", "s"]], ["at", ["var"], ["lit", "s"]]])
    assert _refusal(program, {"s": "x" * 1000}).endswith(OVER_BUDGET)


def test_a_payload_nested_too_deep_to_compare_is_a_flow_error() -> None:
    def nested() -> list[Any]:
        deep: list[Any] = []
        for _ in range(100_000):
            deep = [deep]
        return deep

    both = ["cmp", "==", ["at", ["var"], ["lit", 0]], ["at", ["var"], ["lit", 1]]]
    assert "RecursionError" in _refusal(_deciding(both), [nested(), nested()])


def test_a_condition_nested_past_the_bound_is_refused_when_checked() -> None:
    condition: list[Any] = ["var"]
    for _ in range(700):
        condition = ["not", condition]
    with pytest.raises(ValueError, match=f"forged: a condition: the condition is nested deeper than {MAX_DEPTH}"):
        _deciding(condition).check()


@pytest.mark.parametrize(
    ("condition", "why"),
    [
        (["or", *[["cmp", "==", ["var"], ["lit", index]] for index in range(200)]], "over 500 operations"),
        (["fn", "eval", ["var"]], "'eval' is not a fn of a condition"),
        (["math", "**", ["var"], ["lit", 2]], "'**' is not a math of a condition"),
        (["lit", [1, 2]], "a literal is a string, a number, a boolean or null"),
        (["not"], "not takes 1 operands, not 0"),
        ([["var"]], "is not an operation of a condition"),
    ],
)
def test_a_condition_the_evaluator_would_not_take_is_refused_when_checked(condition: list[Any], why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("*", r"\*")):
        check_condition(condition)


def test_a_program_of_too_many_nodes_is_refused_when_checked() -> None:
    nodes: list[dict[str, Any]] = [{"call": "victim", "next": index + 1} for index in range(3000)]
    with pytest.raises(ValueError, match="3,001 nodes, over the 500"):
        Program({"start": 0, "nodes": [*nodes, {"return": True}]}).check()


def test_a_chain_of_calls_too_long_to_measure_is_a_flow_error_not_a_crash() -> None:
    """Measuring the route ahead recurses along the chain: a program past the node bound (one that
    skipped the check) fails its decision instead of crashing the hop."""
    nodes: list[dict[str, Any]] = [{"call": "victim", "next": index + 1} for index in range(3000)]
    program = Program({"source": "forged", "start": 0, "nodes": [*nodes, {"return": True}]})
    with pytest.raises(FlowError, match="the program is too long to measure from forged"):
        program.advance(0, {}, {})


def test_the_compiler_refuses_a_condition_nested_past_the_bound_naming_its_line(tmp_path: Path) -> None:
    with pytest.raises(FlowCompileError, match=f"flows.py line 3: .*nested deeper than {MAX_DEPTH}"):
        _written(tmp_path, "not " * 40 + 'p["a"]')
