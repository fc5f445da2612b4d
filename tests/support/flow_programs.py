"""Flow programs in tests: compile a flow's source, then run it two ways, as the mesh would (through
`Program.advance`, actor by actor) and as Python would (the source executed with the actors as
functions), so a test compares what a user wrote with what the mesh does."""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya.flow_program import Call, End, Fan, Program
from asya.names import PAUSE
from asya_cdk.flow_compiler import compile_flow

ACTORS = ("classify", "escalate", "accept", "draft", "refine", "evaluate", "fallback", "model-a", "model-b", "pick")
JOINS: dict[str, list[str]] = {"pick": ["classify", "draft"]}
Actor = Callable[[Any], Any]


def compiled(
    tmp_path: Path,
    source: str,
    function: str = "flow",
    *,
    actors: Sequence[str] = ACTORS,
    joins: Mapping[str, Sequence[str]] = JOINS,
) -> dict[str, Any]:
    """The program of `function` in `source` (dedented), written as `flows.py`."""
    file = tmp_path / "flows.py"
    file.write_text(textwrap.dedent(source))
    return compile_flow(file, function, source="flows.py", actors=dict.fromkeys(actors), joins=joins)


@dataclass
class Run:
    """What a run did: the actors called in order, and the payload it returned."""

    trail: list[str] = field(default_factory=list)
    result: Any = None


def run_program(program: Mapping[str, Any], actors: Mapping[str, Actor], payload: Any) -> Run:
    """The program run as the mesh runs it: each decision by `advance`, each actor called once per
    step, a failure taken by the call's `except` with the actor's input (`asya.flows.caught`)."""
    return _MeshRun(Program(program), actors).run(payload)


@dataclass
class _MeshRun:
    running: Program
    actors: Mapping[str, Actor]
    loops: dict[str, int] = field(default_factory=dict)
    done: Run = field(default_factory=Run)

    def run(self, payload: Any) -> Run:
        running = self.running
        step = running.advance(running.start, payload, self.loops)
        while not isinstance(step, End):
            payload = step.payload  # as the program's edits left it
            if isinstance(step, Fan):
                step, payload = self._fan(step, payload)
                continue
            try:
                payload = _called(step.actor, self.actors, payload, self.done)
            except Exception as error:
                target = running.handler_for(step.node, {kind.__name__ for kind in type(error).__mro__})
                if target is None:
                    raise
                step = running.advance(target, payload, self.loops)
                continue
            step = running.advance(running.after(step.node), payload, self.loops)
        self.done.result = step.payload
        return self.done

    def _fan(self, fan: Fan, payload: Any) -> tuple[Call | Fan | End, Any]:
        """Each branch called up to its join, then the join on the gathered list (as the mesh does)."""
        running = self.running
        if fan.mapped:  # the payload, then each item's output; the mesh's gather hands the list on
            carried, *items = fan.branches
            outputs = [_called(item.actor, self.actors, item.payload, self.done) for item in items]
            step = running.advance(running.after(carried.node), [carried.payload, *outputs], self.loops)
            return step, step.payload
        join = _join_of(running, fan.branches[0])
        gathered = []
        for branch in fan.branches:
            step, value = branch, payload
            while step.node != join:
                value = _called(step.actor, self.actors, value, self.done)
                after = running.advance(running.after(step.node), value, dict(self.loops))
                assert isinstance(after, Call)
                step = after
            gathered.append(value)
        result = _called(running.nodes[join]["call"], self.actors, gathered, self.done)
        return running.advance(running.after(join), result, self.loops), result


def _join_of(running: Program, branch: Call) -> int:
    """The join call a branch ends at: the parallel node's `join`, found from the branch's first call."""
    for node in running.nodes:
        if "parallel" in node and branch.node in node["parallel"]:
            return int(node["join"])
    raise AssertionError(f"no parallel starts at node {branch.node}")


def _called(actor: str, actors: Mapping[str, Actor], payload: Any, run: Run) -> Any:
    run.trail.append(actor)
    return payload if actor == PAUSE else actors[actor](payload)


def run_python(source: str, actors: Mapping[str, Actor], payload: Any, function: str = "flow", **names: Any) -> Run:
    """The same source run by Python, the actors as functions (an actor `model-a` is `model_a`);
    `names`: what else the source names (the exception types its `except` clauses catch)."""
    run = Run()

    def recorded(name: str) -> Actor:
        return lambda value: _called(name, actors, value, run)

    namespace: dict[str, Any] = {name.replace("-", "_"): recorded(name) for name in actors}
    namespace |= {"pause": recorded(PAUSE), "parallel": lambda *branches: list(branches)}
    namespace["bounded"] = lambda condition, **_bound: condition
    namespace["map"] = lambda actor, items: [actor(item) for item in items]  # a map's outputs are a list
    namespace |= names
    exec(textwrap.dedent(source), namespace)  # the test's own flow source
    run.result = namespace[function](copy.deepcopy(payload))  # an edit changes its own copy, as in the mesh
    return run
