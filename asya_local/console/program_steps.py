"""The actor-to-actor steps a flow program can take, read from its compiled form (`asya.flow_program`),
for the graphs to draw and `asya flow show` to list.

A program takes its decisions inside each actor's sidecar, so between two actors there may be any
number of `if`s and loop tests: a step is one way from an actor (or the task's start) to the next actor
called (or x-sink, when the program returns), with the conditions met on the way. A step that goes
round a loop again is a `loop` step (drawn as a step back), one an `except` takes is `except`, one
into a parallel branch `parallel`, one behind a decision `decision`; the rest are `next`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from asya.names import SINK

Kind = Literal["next", "decision", "loop", "except", "parallel"]
_PRIORITY: tuple[Kind, ...] = ("loop", "except", "decision", "parallel", "next")


@dataclass(frozen=True, slots=True)
class ProgramStep:
    """From `source` (None: the task's start) to `target` (an actor, or x-sink: the program returned),
    through `conditions` (each as the source says it: `p["score"] < 0.8`, `not (…)`, `except ValueError`)."""

    source: str | None
    target: str
    kind: Kind
    conditions: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The conditions in a line: what a reader needs to know when this step is taken."""
        return "; ".join(self.conditions)


def program_steps(program: Mapping[str, Any]) -> tuple[ProgramStep, ...]:
    """Every step the program can take, once each, in the order its nodes are read: from the start,
    then from each call, after it returns and when one of its `except`s takes its failure."""
    walker = _Walker(program["nodes"])
    walker.walk(None, (), int(program["start"]))
    for node in walker.nodes:
        if "call" not in node:
            continue
        inside = tuple(node.get("in", ()))
        walker.walk(node["call"], inside, int(node["next"]))
        for names, target in node.get("catch", ()):
            walker.walk(node["call"], inside, int(target), conditions=(f"except {', '.join(names)}",), kind="except")
    return tuple(walker.found)


@dataclass(slots=True)
class _Walker:
    nodes: list[dict[str, Any]]
    found: dict[ProgramStep, None] = field(default_factory=dict)  # a set that keeps its order

    def walk(
        self,
        source: str | None,
        inside: tuple[int, ...],
        node: int,
        *,
        conditions: tuple[str, ...] = (),
        kind: Kind = "next",
        passed: frozenset[int] = frozenset(),
    ) -> None:
        """From `source` (sitting in the loops `inside`) on through decisions to the next call or return."""
        if node in passed:  # a loop that goes round without calling anyone: no step
            return
        current = self.nodes[node]
        if "call" in current or "return" in current:
            self.found[ProgramStep(source, current.get("call", SINK), kind, conditions)] = None
        elif "parallel" in current:
            for branch in current["parallel"]:
                self.walk(source, inside, int(branch), conditions=conditions, kind=_stronger(kind, "parallel"))
        elif "set" in current or "gathered" in current:  # an edit of the payload: no step of its own
            self.walk(source, inside, int(current["next"]), conditions=conditions, kind=kind, passed=passed)
        elif "map" in current:  # each item to the mapped actor, and the payload to the map's join
            for branch in (current["map"], current["gather"]):
                self.walk(source, inside, int(branch), conditions=conditions, kind=_stronger(kind, "parallel"))
        else:
            more = passed | {node}
            self._decide(source, inside, node, conditions=conditions, kind=_stronger(kind, "decision"), passed=more)

    def _decide(
        self,
        source: str | None,
        inside: tuple[int, ...],
        node: int,
        *,
        conditions: tuple[str, ...],
        kind: Kind,
        passed: frozenset[int],
    ) -> None:
        """Both ways of an `if`; a `while`'s body (again, for a source inside it: a `loop` step) and
        the way on past it."""
        current = self.nodes[node]
        src = current.get("src", "condition")
        ways = (
            [(current["then"], src, kind), (current["else"], f"not ({src})", kind)]
            if "if" in current
            else [
                (current["body"], f"while {src} (at most {current['max']} times)", "loop" if node in inside else kind),
                (current["exit"], f"not ({src})", kind),
            ]
        )
        for target, condition, way in ways:
            self.walk(source, inside, int(target), conditions=(*conditions, condition), kind=way, passed=passed)


def _stronger(one: Kind, other: Kind) -> Kind:
    return one if _PRIORITY.index(one) <= _PRIORITY.index(other) else other


def call_lines(program: Mapping[str, Any]) -> dict[str, str]:
    """Where the program calls each actor, as its node on the program's graph says it: `line 5`,
    `lines 5, 11`."""
    lines: dict[str, list[int]] = {}
    for node in program["nodes"]:
        if "call" in node and node.get("line"):
            lines.setdefault(node["call"], []).append(int(node["line"]))
    return {
        actor: f"line{'s' if len(set(at)) > 1 else ''} {', '.join(map(str, sorted(set(at))))}"
        for actor, at in lines.items()
    }


def first_actors(steps: Iterable[ProgramStep]) -> list[str]:
    """The actors a task of the program may start at."""
    return list(dict.fromkeys(step.target for step in steps if step.source is None))
