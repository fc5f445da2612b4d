"""The flow compiler (`asya_cdk.flow_compiler`): every construct a flow may use runs as Python would run
the same source, and everything else is refused naming the file, the line and the construct, through
the compiler, `load_mesh` and `asya check` alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asya_cdk.environment import MeshNames, crew_environment
from asya_cdk.flow_compiler import FlowCompileError
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_local.cli import main
from tests.support.flow_programs import compiled, run_program, run_python


class RefusedError(ValueError):
    """What the test's `evaluate` raises, with a base class an `except` may name instead."""


class DeclinedError(RefusedError):
    """A subclass: `except RefusedError` takes it too."""


def _noted(actor: str, **changes: Any) -> Any:
    def called(payload: Any) -> Any:
        if payload.get("fail") == actor:
            raise (DeclinedError if payload.get("declined") else RefusedError)(actor)
        if payload.get("key_error") == actor:
            raise KeyError(actor)
        return {**payload, **changes, "n": payload.get("n", 0) + 1}

    return called


ACTORS = {
    "classify": _noted("classify"),
    "escalate": _noted("escalate", escalated=True),
    "accept": _noted("accept", accepted=True),
    "draft": _noted("draft"),
    "refine": lambda p: {**p, "score": p["score"] + 1, "n": p.get("n", 0) + 1},
    "evaluate": _noted("evaluate"),
    "fallback": _noted("fallback", fallback=True),
    "model-a": _noted("model-a", answer="a"),
    "model-b": _noted("model-b", answer="b"),
    "pick": lambda candidates: {**candidates[0], "answers": [c["answer"] for c in candidates]},
}

CONSTRUCTS: dict[str, str] = {
    "straight_and_nested": """
        def flow(p):
            '''a docstring, and pass, are nothing'''
            pass
            p = classify(p)
            p = accept(escalate(p))
            return p
    """,
    "if_elif_else": """
        def flow(p):
            p = classify(p)
            if p["score"] < 2 and not p.get("urgent"):
                p = escalate(p)
            elif p.get("urgent", False) or p["score"] in [5, 6]:
                return accept(p)
            else:
                p = fallback(p)
            return p
    """,
    "if_without_else": """
        def flow(p):
            p = classify(p)
            if p["score"] > 3:
                p = escalate(p)
            return accept(p)
    """,
    "while_break_continue": """
        def flow(p):
            p = draft(p)
            while bounded(p["score"] < 8, max_iterations=10):
                p = refine(p)
                if p["score"] % 2 == 1:
                    continue
                if p["score"] == p.get("stop_at"):
                    break
                p = evaluate(p)
            return accept(p)
    """,
    "nested_loops": """
        def flow(p):
            p = draft(p)
            while bounded(p["score"] < 6, max_iterations=10):
                p = refine(p)
                while bounded(p["score"] % 3 != 0, max_iterations=3):
                    p = refine(p)
                p = evaluate(p)
            return p
    """,
    "try_except": """
        def flow(p):
            p = classify(p)
            try:
                p = evaluate(p)
                try:
                    p = escalate(p)
                except KeyError:
                    p = fallback(p)
                p = accept(p)
            except (RefusedError, TimeoutError):
                p = fallback(p)
                return p
            return draft(p)
    """,
    "try_in_a_loop": """
        def flow(p):
            p = draft(p)
            while bounded(p["score"] < 4, max_iterations=5):
                try:
                    p = refine(p)
                    p = evaluate(p)
                except RefusedError:
                    break
            return accept(p)
    """,
    "parallel_into_a_join": """
        def flow(p):
            p = classify(p)
            p = pick(parallel(model_a(p), escalate(model_b(p))))
            if p["answers"] == ["a", "b"]:
                p = accept(p)
            return p
    """,
    "edits": """
        def flow(p):
            p["seen"] = {"score": p["score"], "tags": [p["score"] > 2, "x"], "n": len(p)}
            p = classify(p)
            p["score"] += 3
            p["seen"]["twice"] = p["score"] * 2
            if p["score"] > 5:
                p["big"] = True
            while bounded(p["score"] < 9, max_iterations=10):
                p["score"] += 1
                if p["score"] % 3 == 0:
                    p = refine(p)
            try:
                p = evaluate(p)
            except RefusedError:
                p["caught"] = p["seen"]["score"]
            p = accept(p)
            p["seen"]["tags"][1] = p.get("n", 0) - 1
            return p
    """,
    "maps": """
        def flow(p):
            p["items"] = [{"score": p["score"]}, {"score": p["score"] + 1, "fail": p.get("fail")}]
            p = classify(p)
            p["refined"] = [refine(x) for x in p["items"]]
            p["none"] = map(accept, p.get("missing", []))
            p["twice"] = map(evaluate, p["refined"])
            p["scores"] = [p["twice"][0]["score"], p["twice"][1]["n"]]
            return p
    """,
    "pause": """
        def flow(p):
            p = draft(p)
            if p["score"] < 3:
                p = pause(p)
            if p.get("approved"):
                p = accept(p)
            return p
    """,
}
PAYLOADS = [
    {"score": 0},
    {"score": 1, "urgent": True},
    {"score": 5},
    {"score": 6, "stop_at": 6},
    {"score": 2, "stop_at": 2, "approved": True},
    {"score": 3, "fail": "evaluate"},
    {"score": 3, "fail": "evaluate", "declined": True},
    {"score": 3, "key_error": "escalate"},
    {"score": 0, "fail": "evaluate"},
]


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_each_construct_runs_as_python_runs_its_source(tmp_path: Path, name: str) -> None:
    source = CONSTRUCTS[name]
    program = compiled(tmp_path, source)
    for payload in PAYLOADS:
        try:
            expected = run_python(source, ACTORS, payload, RefusedError=RefusedError)
        except (RefusedError, KeyError) as error:  # not caught in Python: not caught by the program either
            with pytest.raises(type(error)):
                run_program(program, ACTORS, payload)
            continue
        ran = run_program(program, ACTORS, payload)
        assert (ran.trail, ran.result) == (expected.trail, expected.result), f"{name} on {payload}"


def test_a_loop_and_a_branch_are_taken_on_the_actors_outputs(tmp_path: Path) -> None:
    """Spelled out once: the loop goes round on refine's output until the score is reached."""
    ran = run_program(compiled(tmp_path, CONSTRUCTS["while_break_continue"]), ACTORS, {"score": 5})
    assert ran.trail == ["draft", "refine", "evaluate", "refine", "refine", "evaluate", "accept"]
    assert ran.result["score"] == 8


def test_an_actor_named_with_a_hyphen_is_called_with_an_underscore(tmp_path: Path) -> None:
    program = compiled(tmp_path, "def flow(p):\n    return model_a(p)\n")
    assert run_program(program, ACTORS, {}).trail == ["model-a"]


def test_the_version_changes_with_the_program_and_not_otherwise(tmp_path: Path) -> None:
    first = compiled(tmp_path, "def flow(p):\n    return accept(p)\n")
    again = compiled(tmp_path, "def flow(p):\n    return accept(p)\n")
    other = compiled(tmp_path, "def flow(p):\n    return escalate(p)\n")
    assert first["version"] == again["version"] != other["version"]


REFUSALS: list[tuple[str, str, int, str]] = [
    ("for", "for x in p:\n        p = accept(p)", 3, "a for loop"),
    ("with", "with p:\n        p = accept(p)", 3, "with is not part of a flow program"),
    ("import", "import os", 3, "import is not part of a flow program"),
    ("print", "print(p)", 3, "print(…) is not part of a flow program"),
    ("bare call", "accept(p)", 3, "an actor's output is the new payload: write p = accept(p)"),
    ("bare pause", "pause(p)", 3, "an actor's output is the new payload: write p = pause(p)"),
    ("bare bounded", "bounded(p)", 3, "bounded(…) is not part of a flow program"),
    ("plain while", "while p['x']:\n        p = accept(p)", 3, "a loop declares its bound: while bounded("),
    ("max 0", "while bounded(p['x'], max_iterations=0):\n        p = accept(p)", 3, "N from 1 to 1000"),
    ("max 1001", "while bounded(p['x'], max_iterations=1001):\n        p = accept(p)", 3, "N from 1 to 1000"),
    ("max name", "while bounded(p['x'], max_iterations=p['n']):\n        p = accept(p)", 3, "N from 1 to 1000"),
    ("max missing", "while bounded(p['x']):\n        p = accept(p)", 3, "N from 1 to 1000"),
    (
        "while else",
        "while bounded(p['x'], max_iterations=2):\n        p = accept(p)\n    else:\n        p = escalate(p)",
        6,
        "while … else is not part of a flow program",
    ),
    ("bare except", "try:\n        p = accept(p)\n    except:\n        p = fallback(p)", 5, "name what is caught"),
    ("except as", "try:\n        p = accept(p)\n    except ValueError as e:\n        pass", 5, "except … as e"),
    ("finally", "try:\n        p = accept(p)\n    finally:\n        p = fallback(p)", 3, "try … finally"),
    (
        "try else",
        "try:\n        p = accept(p)\n    except ValueError:\n        pass\n    else:\n        p = fallback(p)",
        3,
        "try … else",
    ),
    ("bare return", "return", 3, "return the payload: return p"),
    ("actor in a condition", "if accept(p):\n        p = fallback(p)", 3, "accept is an actor: call it before"),
    ("unknown actor", "p = summarize(p)", 3, "summarize is not an actor of this mesh (actors: accept, classify"),
    ("unknown name", "if p['x'] > limit:\n        p = accept(p)", 3, "limit: a condition reads the payload (p)"),
    ("slice", "if p['x'][1:]:\n        p = accept(p)", 3, "slices are not part of a condition"),
    ("other function", "if sorted(p):\n        p = accept(p)", 3, "sorted(…) is not part of a condition"),
    ("attribute", "if p.x:\n        p = accept(p)", 3, "the attribute p.x is not part of a condition"),
    ("other variable", "q = accept(p)", 3, "a flow assigns its payload, p = actor(p), or a field of it"),
    ("edit of another variable", "q['k'] = 1", 3, 'an edit writes a field of the payload: p["key"] = <expression>'),
    ("edit calling an actor", "p['k'] = accept(p)", 3, "accept is an actor: an edit does not call one"),
    ("edit with a function", "p['k'] = sorted(p)", 3, "sorted(…) is not part of a condition"),
    ("edit with a name", "p['k'] = limit", 3, "limit: a condition reads the payload (p) and constants"),
    ("edit of a slice", "p['k'][1:] = [1]", 3, "an edit writes one field, not a slice"),
    ("edit of an attribute", "p.k = 1", 3, "a flow assigns its payload"),
    ("edit with **", "p['k'] = {**p}", 3, "**: an object literal names each of its keys"),
    ("two targets", "p['a'] = p['b'] = 1", 3, "a flow assigns its payload"),
    ("augmented payload", "p += 1", 3, 'an augmented assignment (only p["key"] += <expression> and the like)'),
    ("augmented power", "p['k'] **= 2", 3, "an augmented assignment"),
    ("two arguments", "p = accept(p, p)", 3, "accept(…) takes the payload alone"),
    ("parallel alone", "p = parallel(accept(p), escalate(p))", 3, "parallel(…) is given to the actor that joins"),
    ("parallel to a non-join", "p = accept(parallel(model_a(p), model_b(p)))", 3, "accept is given parallel(…)"),
    ("break outside a loop", "break", 3, "break outside a while loop"),
    ("map with a condition", "p['r'] = [accept(x) for x in p['a'] if x]", 3, "a map calls one actor on each item"),
    ("map of the payload", "p['r'] = [accept(p) for x in p['a']]", 3, "a map calls one actor on each item"),
    ("map of two loops", "p['r'] = [accept(x) for x in p['a'] for y in x]", 3, 'with no condition: p["r"] = ['),
    ("map without a list", "p['r'] = map(accept)", 3, 'a map calls one actor on each item: p["r"] = [actor(x)'),
    ("map of an expression", "p['r'] = [x for x in p['a']]", 3, "a map calls one actor on each item"),
    ("map of a non-actor", "p['r'] = map(nope, p['a'])", 3, "nope is not an actor of this mesh"),
    ("map over a name", "p['r'] = map(accept, items)", 3, "items: a condition reads the payload (p)"),
]


@pytest.mark.parametrize(("body", "line", "message"), [case[1:] for case in REFUSALS], ids=[c[0] for c in REFUSALS])
def test_what_is_not_a_flow_is_refused_naming_file_line_and_construct(
    tmp_path: Path, body: str, line: int, message: str
) -> None:
    source = f"def flow(p):\n    p = classify(p)\n    {body}\n    return p\n"
    with pytest.raises(FlowCompileError) as refused:
        compiled(tmp_path, source)
    assert str(refused.value).startswith(f"flows.py line {line}: "), str(refused.value)
    assert message in str(refused.value)


WHOLE_REFUSALS: list[tuple[str, str, str]] = [
    (
        "join missing the previous actor",
        "def flow(p):\n    p = escalate(p)\n    p = pick(parallel(model_a(p), model_b(p)))\n    return p\n",
        "flows.py line 3: parallel(…) fans out escalate's output, so pick must gather escalate's branches",
    ),
    (
        "parallel first",
        "def flow(p):\n    p = pick(parallel(model_a(p), model_b(p)))\n    return p\n",
        "flows.py line 2: parallel(…) needs an actor before it",
    ),
    (
        "parallel after a pause",
        "def flow(p):\n    p = classify(p)\n    p = pause(p)\n    p = pick(parallel(model_a(p), model_b(p)))\n",
        "flows.py line 4: parallel(…) can follow the pause at line 3",
    ),
    (
        "return before any actor",
        "def flow(p):\n    if p['x']:\n        return p\n    return accept(p)\n",
        "flows.py line 3: the flow returns before calling any actor",
    ),
    ("no actor at all", "def flow(p):\n    pass\n", "flows.py line 1: the flow returns before calling any actor"),
    (
        "map first",
        "def flow(p):\n    p['r'] = [accept(x) for x in p['a']]\n    return p\n",
        "flows.py line 2: a map needs an actor before it",
    ),
    (
        "map after a pause",
        "def flow(p):\n    p = classify(p)\n    p = pause(p)\n    p['r'] = map(accept, p['a'])\n    return p\n",
        "flows.py line 4: a map cannot follow the pause at line 3",
    ),
    (
        "map starting an except",
        "def flow(p):\n    try:\n        p = classify(p)\n    except ValueError:\n"
        "        p['r'] = map(accept, p['a'])\n    return p\n",
        "flows.py line 5: a map cannot start an except",
    ),
    ("missing function", "def other(p):\n    return accept(p)\n", "flows.py: no function flow(…) at the top level"),
    ("syntax error", "def flow(p):\n    p = accept(p\n", "flows.py line 2: not valid Python"),
    ("async def", "async def flow(p):\n    return accept(p)\n", "flows.py line 1: flow(…) is a plain function"),
    (
        "decorator",
        "import functools\n\n@functools.cache\ndef flow(p):\n    return accept(p)\n",
        "flows.py line 4: flow(…) is a plain function",
    ),
    ("two parameters", "def flow(p, q):\n    return accept(p)\n", "flows.py line 1: flow(…) takes one parameter"),
    (
        "import inside",
        "def flow(p):\n    import json\n    return accept(p)\n",
        "flows.py line 2: import is not part of a flow program",
    ),
]


@pytest.mark.parametrize(("source", "message"), [c[1:] for c in WHOLE_REFUSALS], ids=[c[0] for c in WHOLE_REFUSALS])
def test_a_flow_that_cannot_run_is_refused_where_it_goes_wrong(tmp_path: Path, source: str, message: str) -> None:
    with pytest.raises(FlowCompileError) as refused:
        compiled(tmp_path, source)
    assert str(refused.value).startswith(message), str(refused.value)


MESH = """namespace: shop
actors:
  classify: {handler: actors.classify}
  accept: {handler: actors.accept}
flows:
  triage: {program: programs.triage}
"""


def _mesh(tmp_path: Path, program: str) -> Path:
    (tmp_path / "programs.py").write_text(program)
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(MESH)
    return mesh


def test_a_mesh_with_a_program_loads_with_its_shortest_route(tmp_path: Path) -> None:
    source = "def triage(p):\n    p = classify(p)\n    if p['ok']:\n        return p\n    return accept(p)\n"
    mesh = load_mesh(_mesh(tmp_path, source))
    assert mesh.flow_route("triage") == ["classify"]
    assert mesh.programs["triage"]["source"] == "programs.py"


def test_load_mesh_names_the_flow_the_file_and_the_line(tmp_path: Path) -> None:
    mesh = _mesh(tmp_path, "def triage(p):\n    p = classify(p)\n    for x in p:\n        pass\n")
    with pytest.raises(MeshConfigError) as refused:
        load_mesh(mesh)
    assert f"{mesh}: flows.triage.program: programs.py line 3: a for loop" in str(refused.value)


def test_asya_check_exits_non_zero_printing_the_flows_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    mesh = _mesh(tmp_path, "def triage(p):\n    p = classify(p)\n    p = summarize(p)\n")
    assert main(["check", "--config", str(mesh)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"{mesh}: flows.triage.program: programs.py line 3: summarize is not an actor of this mesh" in out
    assert "Traceback" not in out


def test_a_program_too_large_to_carry_in_every_envelope_is_refused(tmp_path: Path) -> None:
    lines = "\n".join(f"    if p['step'] == {index}:\n        p = draft(p)" for index in range(200))
    with pytest.raises(FlowCompileError, match=r"flows.py: flow\(…\) compiles to [\d,]+ bytes, over 16,384"):
        compiled(tmp_path, f"def flow(p):\n    p = draft(p)\n{lines}\n    return p\n")


def test_asya_check_names_the_flow_whose_condition_is_nested_past_the_evaluators_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    deep = "not " * 40
    mesh = _mesh(tmp_path, f"def triage(p):\n    p = classify(p)\n    if {deep}p['ok']:\n        return accept(p)\n")
    assert main(["check", "--config", str(mesh)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"{mesh}: flows.triage.program: programs.py line 3:" in out
    assert "the condition is nested deeper than 32" in out


def test_every_function_that_runs_a_program_knows_the_deployed_versions(tmp_path: Path) -> None:
    """The sidecars and x-resume run only the programs the mesh deployed (docs/flows.md, "Safety")."""
    source = "def triage(p):\n    p = classify(p)\n    if p['ok']:\n        return p\n    return accept(p)\n"
    mesh = load_mesh(_mesh(tmp_path, source))
    version = mesh.programs["triage"]["version"]
    assert mesh.actor_environment("classify", {})["ASYA_FLOW_VERSIONS"] == version
    names = MeshNames("b", "tasks", "events", "idem", "batches", "sump")
    assert crew_environment(mesh, names, "x-resume")["ASYA_FLOW_VERSIONS"] == version
    assert "ASYA_FLOW_VERSIONS" not in crew_environment(mesh, names, "x-sink")
