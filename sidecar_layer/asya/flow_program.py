"""A flow program as it runs: the compiled form of a flow written as a Python function (docs/flows.md),
and the one step the mesh ever takes with it, `advance`: from a point of the program and a payload,
through its decisions, to what happens next (an actor to call, branches to fan out to, the end).

The compiled form is JSON, made ahead of time by the flow compiler and carried by the task's
envelopes (`asya.flows`), so every sidecar, x-resume and the gateway take decisions the same way and
a task never changes program half-way (only deployed ones run: `asya.flows`). Nothing here runs user
code: conditions are expression trees over the payload, read by `evaluate`.

    {"flow": name, "source": "flows.py", "version": "<12 hex>", "start": node,
     "nodes": [node, ...]}

A node is one of (`line`: its line in the source; `in`: the loops it sits in, innermost last):

    {"call": actor, "next": node, "catch": [[[name, ...], node], ...]}
    {"if": expr, "then": node, "else": node, "src": text}
    {"while": expr, "max": n, "body": node, "exit": node, "src": text}
    {"parallel": [node, ...], "join": node}      # each branch a chain of calls ending at the join's call
    {"return": true}

An expression is a list, its operator first: `["var"]` (the payload), `["lit", value]`,
`["at", e, key]`, `["get", e, key, default]`, `["list", e, ...]`, `["and", e, ...]`, `["or", e, ...]`,
`["not", e]`, `["neg", e]`, `["cmp", op, a, b]` (`==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`,
`is`, `is not`), `["math", op, a, b]` (`+`, `-`, `*`, `/`, `//`, `%`) and `["fn", name, e, ...]`
(`len`, `abs`, `min`, `max`, `round`, `any`, `all`).

A program may come in an envelope a producer wrote, so the evaluator is bounded whatever it is given
(docs/flows.md, "Safety"): `check` refuses a program of more than `MAX_NODES` nodes or a condition
deeper than `MAX_DEPTH` or larger than `MAX_CONDITION_NODES`; arithmetic takes numbers only, within
±`MAX_MAGNITUDE` (no string formatting with `%`, no repeating with `*`), `round` at most
`MAX_NDIGITS` digits either way; and one `advance` spends at most `MAX_STEPS` (`_Budget`): each
operation one step, plus the items, nested ones included, of what it reads whole.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# more decisions than this between two actors is a program that loops without calling anyone
MAX_DECISIONS = 10_000
# the bounds of what one program may make the evaluator do, whoever wrote it (the module's docstring)
MAX_NODES = 500  # a compiled program is at most 16 KB: fewer than 400 nodes
MAX_DEPTH = 32
MAX_CONDITION_NODES = 500
MAX_MAGNITUDE = 2**53  # the largest integer a float (and so any JSON reader) still holds exactly
MAX_NDIGITS = 15  # the digits a float has: more rounds nothing, and an int's -2,000,000 costs seconds
MAX_STEPS = 200_000  # about a tenth of a second of the evaluator's time

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
    "is": operator.is_,
    "is not": operator.is_not,
}
_ARITY = {"var": (1, 1), "lit": (2, 2), "at": (3, 3), "get": (4, 4), "list": (1, None), "and": (2, None)}
_ARITY |= {"or": (2, None), "not": (2, 2), "neg": (2, 2), "cmp": (4, 4), "math": (4, 4), "fn": (2, None)}
_MATH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "abs": lambda value: _bounded(abs(_number(value))),
    "min": min,
    "max": max,
    "round": lambda value, *ndigits: _bounded(round(_number(value), *map(_ndigits, ndigits))),
    "any": any,
    "all": all,
}
# the nodes each kind of node leads to
_TARGETS = {"call": ("next",), "if": ("then", "else"), "while": ("body", "exit"), "parallel": ("join",), "return": ()}
COMPARISONS = frozenset(_COMPARE)
ARITHMETIC = frozenset(_MATH)


class FlowError(Exception):
    """The program cannot go on with this payload: a condition reads a field that is not there or
    compares what cannot be compared, or a loop went round more times than its `max_iterations`."""

    def __init__(self, message: str, *, loop_limit: bool = False) -> None:
        super().__init__(message)
        self.loop_limit = loop_limit
        self.payload: Any = None  # the payload the program was deciding on, once known (`asya.flows`)


@dataclass(frozen=True, slots=True)
class Call:
    """The program calls `actor` at node `node`; `route` is the shortest way from there to the end."""

    node: int
    actor: str
    route: list[str]


@dataclass(frozen=True, slots=True)
class Fan:
    """Parallel branches: each a list of calls ending at the join's call, as one route."""

    branches: list[Call]


@dataclass(frozen=True, slots=True)
class End:
    """The program returned."""


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
        """From `node` (not yet taken) with `payload`, through the program's decisions to its next
        step. `loops` (loop node → times its body was entered) is updated in place: a loop's count
        goes when the program leaves it. All of its decisions share one budget of `MAX_STEPS`."""
        budget = _Budget()
        for _ in range(MAX_DECISIONS):
            current = self.nodes[node]
            _leave_loops(loops, current)
            if "call" in current:
                return self.call(node)
            if "return" in current:  # a return inside a loop leaves it too
                loops.clear()
                return End()
            if "parallel" in current:
                return Fan([self.call(branch) for branch in current["parallel"]])
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
            if kind in ("if", "while"):
                try:
                    check_condition(node[kind])
                except ValueError as exc:
                    raise ValueError(f"{self.where(index)}: {node.get('src', 'a condition')}: {exc}") from None

    def call(self, node: int) -> Call:
        try:
            route = self.shortest(node)
        except RecursionError:  # a chain of calls longer than any compiled program has: a forged one
            raise FlowError(f"the program is too long to measure from {self.where(node)}") from None
        return Call(node, self.nodes[node]["call"], route)

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
        return self.shortest(current["exit"])

    def _test(self, node: int, expression: list[Any], payload: Any, budget: _Budget) -> bool:
        try:
            return bool(budget.evaluate(expression, payload))
        except FlowError as exc:
            raise FlowError(f"{self.where(node)}: {self.nodes[node].get('src', 'condition')}: {exc}") from None


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


def check_condition(expression: Any) -> None:
    """A condition the evaluator can take: each operation known, with its operands, no deeper than
    `MAX_DEPTH` and of at most `MAX_CONDITION_NODES` operations (a `ValueError` saying which bound)."""
    pending: list[tuple[Any, int]] = [(expression, 1)]
    count = 0
    while pending:
        current, depth = pending.pop()
        count += 1
        if depth > MAX_DEPTH or count > MAX_CONDITION_NODES:
            bound = f"nested deeper than {MAX_DEPTH}" if depth > MAX_DEPTH else f"over {MAX_CONDITION_NODES} operations"
            raise ValueError(f"the condition is {bound}")
        if not isinstance(current, list) or not current or not isinstance(current[0], str) or current[0] not in _ARITY:
            raise ValueError(f"{current!r} is not an operation of a condition")
        least, most = _ARITY[current[0]]
        if len(current) < least or (most is not None and len(current) > most):
            given = f"{least - 1}" if least == most else f"at least {least - 1}"
            raise ValueError(f"{current[0]} takes {given} operands, not {len(current) - 1}")
        named = {"cmp": _COMPARE, "math": _MATH, "fn": FUNCTIONS}.get(current[0])
        if named is not None and (not isinstance(current[1], str) or current[1] not in named):
            raise ValueError(f"{current[1]!r} is not a {current[0]} of a condition")
        if current[0] == "lit" and not is_plain(current[1]):
            raise ValueError(f"a literal is a string, a number, a boolean or null, not {current[1]!r}")
        first = 2 if named is not None else 1
        pending.extend((operand, depth + 1) for operand in (current[first:] if current[0] != "lit" else ()))


def evaluate(expression: list[Any], payload: Any) -> Any:
    """The value of a condition's expression tree over `payload`, within one decision's budget."""
    return _Budget().evaluate(expression, payload)


class _Budget:
    """What one `advance` may still spend: each operation a step, and one an item (nested ones and
    characters included) of what an operation reads whole (`==`, `<`, `in` on a list or a string,
    `min`, `max`, `any`, `all`), so no payload makes one decision cost more than `MAX_STEPS`, however
    large it is; what reads a value in one step (`len`, `in` an object, a subscript) costs one."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_STEPS

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise OverflowError(f"the decision took over {MAX_STEPS:,} steps")

    def read_whole(self, value: Any) -> None:
        """Spend what reading `value` whole costs, counted only as far as the budget goes."""
        self.spend(_weight(value, self.left + 1))

    def evaluate(self, expression: list[Any], payload: Any) -> Any:
        """The condition's value as Python would compute it (numbers bounded, the module's docstring);
        what Python would raise, and what the bounds refuse, is a `FlowError` saying what was wrong."""
        try:
            return _value(expression, _Scope(payload, self))
        except KeyError as exc:
            raise FlowError(f"no field {exc.args[0]!r}") from None
        except IndexError:
            raise FlowError("an index past the end of a list") from None
        except (TypeError, ValueError, ArithmeticError) as exc:  # ArithmeticError: a division by zero, a bound
            raise FlowError(str(exc)) from None
        except (RecursionError, MemoryError) as exc:  # a payload nested too deep to compare, a bound missed
            raise FlowError(f"the condition cannot be computed: {type(exc).__name__}") from None


@dataclass(frozen=True, slots=True)
class _Scope:
    payload: Any
    budget: _Budget


def _value(expression: list[Any], scope: _Scope) -> Any:
    operation = _OPERATIONS.get(expression[0])
    if operation is None:
        raise TypeError(f"unknown operator {expression[0]!r} in the compiled flow")
    scope.budget.spend()
    return operation(expression, scope)


def is_plain(value: Any) -> bool:
    """A value a condition may hold as a constant: JSON's scalars."""
    return value is None or type(value) in (bool, int, float, str)


def _number(value: Any) -> float:
    """`value` if it is a number within ±`MAX_MAGNITUDE`: arithmetic on a string or a list would format
    or repeat it (`"%0600000000d" % 2` is 600 MB), and on a huge integer costs what its digits cost."""
    if type(value) not in (int, float):
        raise TypeError(f"arithmetic takes numbers, not a {type(value).__name__}")
    return _bounded(value)


def _bounded(value: float) -> float:
    """`value` (an int or a float, as it was), unless it is beyond ±`MAX_MAGNITUDE`."""
    if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:
        raise OverflowError("a number beyond ±2**53")
    return value


def _ndigits(value: Any) -> int:
    if type(value) is not int or abs(value) > MAX_NDIGITS:
        raise ValueError(f"round() takes at most {MAX_NDIGITS} digits either way, not {value!r}")
    return value


def _arithmetic(expression: list[Any], scope: _Scope) -> Any:
    left, right = _number(_value(expression[2], scope)), _number(_value(expression[3], scope))
    return _bounded(_MATH[expression[1]](left, right))


def _compare(expression: list[Any], scope: _Scope) -> Any:
    op, left, right = expression[1], _value(expression[2], scope), _value(expression[3], scope)
    if op in ("in", "not in"):  # a search of a list or a string; an object's key is found at once
        scope.budget.read_whole(left if isinstance(right, dict) else right)
    elif op not in ("is", "is not") and type(left) is type(right):  # values of two types differ at once
        scope.budget.read_whole(left)
    return _COMPARE[op](left, right)


def _function(expression: list[Any], scope: _Scope) -> Any:
    name, arguments = expression[1], [_value(item, scope) for item in expression[2:]]
    if name in _READING_WHOLE:
        for argument in arguments:
            scope.budget.read_whole(argument)
    return FUNCTIONS[name](*arguments)


_READING_WHOLE = frozenset({"min", "max", "any", "all"})


def _weight(value: Any, limit: int) -> int:
    """The items of `value`, nested ones and characters included, counted up to `limit` at most."""
    count, pending = 0, [value]
    while pending and count < limit:
        current = pending.pop()
        count += len(current) if isinstance(current, str | list | dict) else 1
        if count < limit and isinstance(current, dict | list):
            pending.extend(current.values() if isinstance(current, dict) else current)
    return count


def _get(expression: list[Any], scope: _Scope) -> Any:
    container = _value(expression[1], scope)
    if not isinstance(container, dict):
        raise TypeError(f".get() on a {type(container).__name__}, not an object")
    return container.get(_value(expression[2], scope), _value(expression[3], scope))


def _all_of(expression: list[Any], scope: _Scope) -> Any:
    """`a and b and …`: the first falsy value, or the last."""
    result: Any = True
    for item in expression[1:]:
        result = _value(item, scope)
        if not result:
            return result
    return result


def _any_of(expression: list[Any], scope: _Scope) -> Any:
    """`a or b or …`: the first truthy value, or the last."""
    result: Any = False
    for item in expression[1:]:
        result = _value(item, scope)
        if result:
            return result
    return result


_OPERATIONS: dict[str, Callable[[list[Any], _Scope], Any]] = {
    "var": lambda _, scope: scope.payload,
    "lit": lambda e, _: e[1],
    "at": lambda e, scope: _value(e[1], scope)[_value(e[2], scope)],
    "get": _get,
    "list": lambda e, scope: [_value(item, scope) for item in e[1:]],
    "and": _all_of,
    "or": _any_of,
    "not": lambda e, scope: not _value(e[1], scope),
    "neg": lambda e, scope: -_number(_value(e[1], scope)),
    "cmp": _compare,
    "math": _arithmetic,
    "fn": _function,
}
