"""The flow evaluator (`asya.flow_program`): a condition has the value Python gives the same source; what
Python would raise is a `FlowError` naming the line and the condition; loops count their rounds, up to
and not past `max_iterations`, afresh each time they are entered; the route shown ahead is the
shortest way to the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asya import flow_program
from asya.flow_expressions import FlowError, evaluate
from asya.flow_program import Call, End, Program
from tests.support.flow_programs import compiled

PAYLOAD = {
    "a": 2,
    "b": 0,
    "s": "text",
    "f": 2.456,
    "items": [3, 0, 5],
    "none": None,
    "flag": True,
    "d": {"k": 1},
    "huge": 1.5e308,
}
CONDITIONS = [
    'p["a"] and p["s"]',
    'p["b"] and p["missing"]',
    'p["a"] or p["missing"]',
    'p["b"] or p["none"] or p["s"]',
    'p["b"] or p["none"]',
    '1 < p["a"] <= 2 < 3',
    '1 < p["a"] < 2',
    'p.get("missing")',
    'p.get("missing", 7)',
    'p.get("a", 7)',
    'p["d"].get("k")',
    '"a" in p',
    '"z" not in p["d"]',
    'p["none"] is None',
    'p["a"] is not None',
    'p["a"] * 3 + 1 - p["f"] / 2',
    'p["a"] // 3 + p["a"] % 3',
    '-p["a"]',
    'not p["items"][1]',
    'p["items"][-1]',
    'len(p["items"]) == 3',
    'abs(p["a"] - 5)',
    'min(p["items"]) + max(p["a"], 4)',
    'round(p["f"], 1)',
    'any(p["items"]) and not all(p["items"])',
    'p["s"] == "text" != p["a"]',
    'p["a"] in [1, 2, 3]',
]


def _condition(tmp_path: Path, condition: str) -> tuple[Program, int]:
    """A flow deciding on `condition` after one actor: the program and its decision's node."""
    program = Program(
        compiled(tmp_path, f"def flow(p):\n    p = classify(p)\n    if {condition}:\n        p = accept(p)\n")
    )
    [node] = [index for index, node in enumerate(program.nodes) if "if" in node]
    return program, node


@pytest.mark.parametrize("condition", CONDITIONS)
def test_a_condition_has_the_value_python_gives_it(tmp_path: Path, condition: str) -> None:
    program, node = _condition(tmp_path, condition)
    expected = eval(condition, {"p": PAYLOAD})
    value = evaluate(program.nodes[node]["if"], PAYLOAD)
    assert (type(value), value) == (type(expected), expected), "the value itself, as `and`/`or` return it"
    step = program.advance(node, PAYLOAD, {})
    assert isinstance(step, Call) == bool(expected)


@pytest.mark.parametrize(
    ("condition", "why"),
    [
        ('p["missing"] > 1', "no field 'missing'"),
        ('p["s"] < 3', "'<' not supported between instances of 'str' and 'int'"),
        ('p["a"] / p["b"] > 1', "division by zero"),
        ('round(p["huge"] * 10) > 1', "a number beyond ±2**53"),
        ('p["items"][7]', "an index past the end of a list"),
        ('p["s"].get("x")', ".get() on a str, not an object"),
        ('p["a"] and p["missing"]', "no field 'missing'"),
    ],
)
def test_what_python_would_raise_fails_the_flow_naming_the_line_and_condition(
    tmp_path: Path, condition: str, why: str
) -> None:
    program, node = _condition(tmp_path, condition)
    with pytest.raises(FlowError) as failed:
        program.advance(node, PAYLOAD, {})
    assert str(failed.value) == f"flows.py line 3: {condition.replace(chr(34), chr(39))}: {why}"
    assert not failed.value.loop_limit


LOOP = """
def flow(p):
    p = draft(p)
    while bounded(p["go"], max_iterations=3):
        p = refine(p)
    return accept(p)
"""


def _walk(program: Program, outputs: list[dict[str, Any]], loops: dict[str, int] | None = None) -> list[str]:
    """The actors a task calls when the actors' outputs are `outputs`, in turn (the first is the input)."""
    loops = {} if loops is None else loops
    step = program.advance(program.start, outputs[0], loops)
    trail = []
    for output in outputs[1:]:
        assert isinstance(step, Call), f"the program ended before {output}"
        trail.append(step.actor)
        step = program.advance(program.after(step.node), output, loops)
    assert isinstance(step, Call | End)
    return [*trail, step.actor] if isinstance(step, Call) else trail


def test_a_loop_may_go_round_exactly_max_iterations(tmp_path: Path) -> None:
    program = Program(compiled(tmp_path, LOOP))
    go, done = {"go": True}, {"go": False}
    assert _walk(program, [{}, go, go, go, done]) == ["draft", "refine", "refine", "refine", "accept"]


def test_one_round_more_fails_with_the_loop_limit(tmp_path: Path) -> None:
    program = Program(compiled(tmp_path, LOOP))
    go = {"go": True}
    with pytest.raises(FlowError) as failed:
        _walk(program, [{}, go, go, go, go])
    assert failed.value.loop_limit
    assert "the loop at flows.py line 4 (p['go']) went round 3 times (max_iterations)" in str(failed.value)


NESTED = """
def flow(p):
    p = draft(p)
    while bounded(p["outer"], max_iterations=10):
        p = evaluate(p)
        while bounded(p["inner"], max_iterations=2):
            p = refine(p)
            if p.get("stop"):
                break
        p = classify(p)
    return accept(p)
"""


BOTH = {"outer": True, "inner": True}


@pytest.mark.parametrize(
    "leaving",
    [{"outer": True, "inner": False}, {**BOTH, "stop": True}],
    ids=["condition fails", "break"],
)
def test_an_inner_loop_counts_afresh_when_the_outer_loop_enters_it(tmp_path: Path, leaving: dict[str, Any]) -> None:
    """Twice round the inner loop (its bound), left, entered again by the outer loop: twice more is fine."""
    program = Program(compiled(tmp_path, NESTED))
    outputs = [{}, BOTH, BOTH, BOTH, leaving, BOTH, BOTH, BOTH, leaving, {"outer": False}]
    assert _walk(program, outputs) == ["draft", *["evaluate", "refine", "refine", "classify"] * 2, "accept"]


def test_without_leaving_the_inner_loop_its_third_round_fails(tmp_path: Path) -> None:
    program = Program(compiled(tmp_path, NESTED))
    with pytest.raises(FlowError) as failed:
        _walk(program, [{}, BOTH, BOTH, BOTH, BOTH])
    assert failed.value.loop_limit
    assert "flows.py line 6" in str(failed.value)


def test_a_loop_left_by_return_or_by_an_except_keeps_no_count(tmp_path: Path) -> None:
    source = """
    def flow(p):
        p = draft(p)
        try:
            while bounded(p["go"], max_iterations=5):
                p = refine(p)
                if p.get("done"):
                    return p
        except ValueError:
            p = fallback(p)
        return accept(p)
    """
    program = Program(compiled(tmp_path, source))
    loops: dict[str, int] = {}
    refine = program.advance(program.start, {}, loops)
    assert isinstance(refine, Call)
    refine = program.advance(program.after(refine.node), {"go": True}, loops)
    assert isinstance(refine, Call)
    assert refine.actor == "refine"
    assert loops, "inside the loop, its count is kept"
    caught = dict(loops)
    target = program.handler_for(refine.node, {"ValueError", "Exception"})
    assert target is not None
    fallback = program.advance(target, {"go": True}, caught)
    assert isinstance(fallback, Call)
    assert fallback.actor == "fallback"
    assert caught == {}, "the except is outside the loop: its count is gone"
    ended = dict(loops)
    assert isinstance(program.advance(program.after(refine.node), {"go": True, "done": True}, ended), End)
    assert ended == {}, "the program returned from inside the loop: nothing is counted"


def test_decisions_that_never_call_an_actor_stop_at_the_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flow_program, "MAX_DECISIONS", 100)
    source = """
    def flow(p):
        p = draft(p)
        while bounded(p["go"], max_iterations=1000):
            while bounded(p["go"], max_iterations=1):
                break
        return p
    """
    program = Program(compiled(tmp_path, source))
    with pytest.raises(FlowError) as failed:
        _walk(program, [{}, {"go": True}])
    assert not failed.value.loop_limit
    assert str(failed.value).startswith("100 decisions without calling an actor, from flows.py line")


def test_the_route_ahead_is_the_shortest_way_to_the_end(tmp_path: Path) -> None:
    source = """
    def flow(p):
        p = classify(p)
        if p["x"]:
            p = escalate(p)
            p = evaluate(p)
        else:
            p = fallback(p)
        while bounded(p["go"], max_iterations=4):
            p = refine(p)
            p = evaluate(p)
        p = pick(parallel(model_a(p), model_b(escalate(p))))
        return accept(p)
    """
    program = Program(compiled(tmp_path, source, joins={"pick": ["evaluate", "fallback"]}))
    assert program.shortest(program.start) == ["classify", "fallback", "model-a", "pick", "accept"]
    step = program.advance(program.after(program.start), {"x": False, "go": True}, {})
    assert isinstance(step, Call)
    assert step.actor == "fallback"
    refine = program.advance(program.after(step.node), {"go": True}, {})
    assert isinstance(refine, Call)
    assert refine.route == ["refine", "evaluate", "model-a", "pick", "accept"], "the loop's body once, then out"
