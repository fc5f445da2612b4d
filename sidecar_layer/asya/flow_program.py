"""A flow program as it runs: the compiled form of a flow written as a Python function (docs/flows.md),
and the one step the mesh ever takes with it, `advance`: from a point of the program and a payload,
through its decisions, to what happens next (an actor to call, branches to fan out to, the end).

The compiled form is JSON, made ahead of time by the flow compiler and carried by the task's
envelopes (`asya.flows`), so every sidecar, x-resume and the gateway take decisions the same way and
a task never changes program half-way (only deployed ones run: `asya.flows`). Nothing here runs user
code: conditions and edits are expression trees over the payload (`asya.flow_expressions`).

    {"flow": name, "source": "flows.py", "version": "<12 hex>", "start": node,
     "nodes": [node, ...]}

A node is one of (`line`: its line in the source; `in`: the loops it sits in, innermost last):

    {"call": actor, "next": node, "catch": [[[name, ...], node], ...]}
    {"set": [key, ...], "value": expr, "next": node, "src": text}   # p[key][...] = value: an edit
    {"if": expr, "then": node, "else": node, "src": text}
    {"while": expr, "max": n, "body": node, "exit": node, "src": text}
    {"parallel": [node, ...], "join": node}      # each branch a chain of calls ending at the join's call
    {"map": node, "over": expr, "gather": node, "src": text}   # one branch per item, to the call `map`
    {"gathered": [key, ...], "next": node, "src": text}   # [payload, *outputs] → p[key]… = outputs
    {"return": true}

Conditions and the values edits write are expressions (`asya.flow_expressions`), evaluated within
the bounds of one `Budget` per `advance`; `check` refuses a program of more than `MAX_NODES` nodes, or
an expression past the bounds `check_condition` holds it to, before it runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asya.flow_expressions import MAX_STEPS, Budget, FlowError, assigned, check_condition, placed

# more decisions than this between two actors is a program that loops without calling anyone
MAX_DECISIONS = 10_000
# the most nodes a program may have, whoever wrote it (docs/flows.md, "Safety")
MAX_NODES = 500  # a compiled program is at most 16 KB: fewer than 400 nodes

# the nodes each kind of node leads to
_TARGETS = {
    "call": ("next",),
    "set": ("next",),
    "if": ("then", "else"),
    "while": ("body", "exit"),
    "parallel": ("join",),
    "map": ("map", "gather"),
    "gathered": ("next",),
    "return": (),
}


@dataclass(frozen=True, slots=True)
class Call:
    """The program calls `actor` at node `node` with `payload` (as the program's edits on the way left
    it); `route` is the shortest way from there to the end."""

    node: int
    actor: str
    route: list[str]
    payload: Any


@dataclass(frozen=True, slots=True)
class Fan:
    """Parallel branches: each a list of calls ending at the join's call, as one route. A parallel's
    branches are all given `payload`; a map's (`mapped`) one item each, after a first branch that
    carries `payload` itself straight to the join."""

    branches: list[Call]
    payload: Any
    mapped: bool = False


@dataclass(frozen=True, slots=True)
class End:
    """The program returned `payload`."""

    payload: Any


Step = Call | Fan | End


@dataclass(slots=True)
class Program:
    """A compiled flow, read once from its JSON; `routes` caches the shortest route from each node."""

    document: Mapping[str, Any]
    _shortest: dict[int, list[str]] = field(default_factory=dict)

    @property
    def nodes(self) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = self.document["nodes"]
        return nodes

    @property
    def start(self) -> int:
        return int(self.document["start"])

    def where(self, node: int) -> str:
        """`flows.py line 12`, for messages."""
        line = self.nodes[node].get("line")
        source = self.document.get("source", "the flow")
        return f"{source} line {line}" if line else str(source)

    def advance(self, node: int, payload: Any, loops: dict[str, int]) -> Step:
        """From `node` (not yet taken) with `payload`, through the program's decisions and edits to its
        next step, which carries the payload as the edits left it (`payload` itself is never changed).
        `loops` (loop node → times its body was entered) is updated in place: a loop's count goes when
        the program leaves it. All of its decisions and edits share one budget of `MAX_STEPS`."""
        budget = Budget()
        for _ in range(MAX_DECISIONS):
            current = self.nodes[node]
            _leave_loops(loops, current)
            if "call" in current:
                return self.call(node, payload)
            if "return" in current:  # a return inside a loop leaves it too
                loops.clear()
                return End(payload)
            if "parallel" in current:
                return Fan([self.call(branch, payload) for branch in current["parallel"]], payload)
            if "map" in current:
                return self._map(node, current, payload, budget)
            if "set" in current or "gathered" in current:
                payload = self._edit(node, current, payload, budget)
                node = current["next"]
                continue
            if "if" in current:
                node = current["then"] if self._test(node, current["if"], payload, budget) else current["else"]
                continue
            # a `while`: its body once more, within its bound, or on past it
            if not self._test(node, current["while"], payload, budget):
                loops.pop(str(node), None)
                node = current["exit"]
                continue
            count = loops.get(str(node), 0) + 1
            if count > current["max"]:
                message = (
                    f"the loop at {self.where(node)} ({current.get('src', 'while')}) went round "
                    f"{current['max']} times (max_iterations) and would go round again"
                )
                raise FlowError(message, loop_limit=True)
            loops[str(node)] = count
            node = current["body"]
        raise FlowError(f"{MAX_DECISIONS} decisions without calling an actor, from {self.where(node)}")

    def check(self) -> None:
        """Every node one of the kinds `advance` takes, leading only to nodes of the program, with its
        loops and bound as numbers: a program that came in an envelope is checked whole before it runs,
        so a corrupt one is refused at once instead of failing half-way through a hop (`ValueError`)."""
        nodes = self.nodes
        if len(nodes) > MAX_NODES:
            raise ValueError(f"{len(nodes):,} nodes, over the {MAX_NODES:,} a program may have")
        for index, node in enumerate(nodes):
            kind = next((kind for kind in _TARGETS if kind in node), None)
            if kind is None:
                raise ValueError(f"{node!r} is not a node of a flow program")
            targets = [node[name] for name in _TARGETS[kind]] + list(node.get("parallel") or [])
            targets += [target for _, target in node.get("catch") or []]
            if not all(type(target) is int and 0 <= target < len(nodes) for target in targets):
                raise ValueError(f"a {kind} node leads outside the program: {targets}")
            if not isinstance(node.get("in", []), list) or (kind == "while" and type(node.get("max")) is not int):
                raise ValueError(f"a {kind} node's loops or bound are not numbers: {node!r}")
            expressions = [node[kind]] if kind in ("if", "while") else []
            if kind in ("set", "gathered"):
                if not isinstance(node[kind], list) or not node[kind] or (kind == "set" and "value" not in node):
                    raise ValueError(f"an edit names a key of the payload and a value: {node!r}")
                expressions = [*node[kind], *([node["value"]] if kind == "set" else [])]
            if kind == "map":
                expressions = [node["over"]]
                if not all("call" in nodes[node[name]] for name in ("map", "gather")):
                    raise ValueError(f"a map's branches start at calls: {node!r}")
            try:
                for expression in expressions:
                    check_condition(expression)
            except ValueError as exc:
                unnamed = "an edit" if kind == "set" else "a condition"
                raise ValueError(f"{self.where(index)}: {node.get('src', unnamed)}: {exc}") from None

    def call(self, node: int, payload: Any) -> Call:
        try:
            route = self.shortest(node)
        except RecursionError:  # a chain of calls longer than any compiled program has: a forged one
            raise FlowError(f"the program is too long to measure from {self.where(node)}") from None
        return Call(node, self.nodes[node]["call"], route, payload)

    def reaching(self, node: int, actor: str) -> int:
        """The call of `actor`: `node`'s, or the first on along its chain of calls. A join's envelope is
        the first branch's, and a branch that failed (a join that tolerates or collects failures) is
        still placed at the call that failed, short of the join; `node` when `actor` is not on it."""
        current = node
        for _ in self.nodes:
            if self.nodes[current].get("call") == actor:
                return current
            if "call" not in self.nodes[current]:
                break
            current = int(self.nodes[current]["next"])
        return node

    def after(self, node: int) -> int:
        """Where the program goes on once the actor called at `node` returned."""
        return int(self.nodes[node]["next"])

    def handler_for(self, node: int, names: set[str]) -> int | None:
        """The `except` that catches an error known by `names` at the call `node`, innermost first."""
        for caught, target in self.nodes[node].get("catch", []):
            if names & set(caught):
                return int(target)
        return None

    def shortest(self, node: int) -> list[str]:
        """The fewest actors from `node` to the end (a loop's body not entered, the cheaper branch of
        each decision, a parallel's first branch): what the route shows ahead, and what progress counts
        as left (docs/flows.md, "Progress")."""
        if node not in self._shortest:
            self._shortest[node] = []  # a cycle back to a node being measured adds nothing
            self._shortest[node] = self._measure(node)
        return self._shortest[node]

    def _measure(self, node: int) -> list[str]:
        current = self.nodes[node]
        if "call" in current:
            return [current["call"], *self.shortest(current["next"])]
        if "return" in current:
            return []
        if "parallel" in current:
            return self.shortest(current["parallel"][0])
        if "if" in current:
            return min(self.shortest(current["then"]), self.shortest(current["else"]), key=len)
        if "set" in current or "gathered" in current:
            return self.shortest(current["next"])
        if "map" in current:  # an empty list: the payload alone, to the join
            return self.shortest(current["gather"])
        return self.shortest(current["exit"])

    def _test(self, node: int, expression: list[Any], payload: Any, budget: Budget) -> bool:
        try:
            return bool(budget.evaluate(expression, payload))
        except FlowError as exc:
            raise FlowError(f"{self.where(node)}: {self.nodes[node].get('src', 'condition')}: {exc}") from None

    def _edit(self, node: int, current: Mapping[str, Any], payload: Any, budget: Budget) -> Any:
        """An edit's payload; for the step after a map's join, the payload the map started from with
        the branches' outputs, in item order, where the map puts them."""
        try:
            if "set" in current:
                return assigned(payload, current["set"], current["value"], budget)
            if not isinstance(payload, list) or not payload:
                raise FlowError(f"a map's join gives a list, the payload first, not {type(payload).__name__}")
            return placed(payload[0], current["gathered"], payload[1:], budget)
        except FlowError as exc:
            raise FlowError(f"{self.where(node)}: {current.get('src', 'edit')}: {exc}") from None

    def _map(self, node: int, current: Mapping[str, Any], payload: Any, budget: Budget) -> Fan:
        """A map's branches: the payload to its join, then each item of the list to the mapped actor."""
        try:
            items = budget.evaluate(current["over"], payload)
            if not isinstance(items, list):
                raise FlowError(f"a map goes over a list, not a {type(items).__name__}")
            if len(items) > budget.left:  # a branch an item, made before any bound on width is checked
                raise FlowError(f"a map of {len(items):,} items is over the {MAX_STEPS:,} steps of one decision")
            budget.spend(len(items))
        except FlowError as exc:
            raise FlowError(f"{self.where(node)}: {current.get('src', 'map')}: {exc}") from None
        each = int(current["map"])
        carried = self.call(int(current["gather"]), payload)
        return Fan([carried, *(self.call(each, item) for item in items)], payload, mapped=True)


def digest(document: Mapping[str, Any]) -> str:
    """A program's version: the digest of its compiled form (all but `version` itself), so a header
    whose program was changed no longer carries the version it claims."""
    body = {key: value for key, value in document.items() if key != "version"}
    written = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(written.encode()).hexdigest()[:12]


def _leave_loops(loops: dict[str, int], node: Mapping[str, Any]) -> None:
    """Forget the counts of the loops the program has left (by `break`, `return` or an `except`)."""
    inside = {str(loop) for loop in node.get("in", ())}
    for loop in [loop for loop in loops if loop not in inside]:
        del loops[loop]
