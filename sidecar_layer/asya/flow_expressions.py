"""The expressions of a flow program (docs/flows.md): its conditions, and the values its edits write
(`p["k"] = <expression>`), as trees over the payload, evaluated as data: no `eval`, no user code.

An expression is a list, its operator first: `["var"]` (the payload), `["lit", value]`,
`["at", e, key]`, `["get", e, key, default]`, `["list", e, ...]`, `["obj", key, e, ...]` (a dict literal,
keys and values alternating), `["and", e, ...]`, `["or", e, ...]`, `["not", e]`, `["neg", e]`,
`["cmp", op, a, b]` (`==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`, `is`, `is not`),
`["math", op, a, b]` (`+`, `-`, `*`, `/`, `//`, `%`) and `["fn", name, e, ...]` (`len`, `abs`, `min`,
`max`, `round`, `any`, `all`).

A program may come in an envelope a producer wrote, so the evaluator is bounded whatever it is given
(docs/flows.md, "Safety"): `check_condition` refuses an expression deeper than `MAX_DEPTH` or larger
than `MAX_CONDITION_NODES`; arithmetic takes numbers only, within ±`MAX_MAGNITUDE` (no string
formatting with `%`, no repeating with `*`), `round` at most `MAX_NDIGITS` digits either way; and one
`Budget` (an `advance` of the program) spends at most `MAX_STEPS`: each operation one step, plus the
items, nested ones included, of what it reads whole, and of each value an edit writes (so edits cannot
grow a payload without bound, however they share its parts).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# the bounds of what one program may make the evaluator do, whoever wrote it (the module's docstring)
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
_ARITY = {"var": (1, 1), "lit": (2, 2), "at": (3, 3), "get": (4, 4), "list": (1, None), "obj": (1, None)}
_ARITY |= {"and": (2, None), "or": (2, None), "not": (2, 2), "neg": (2, 2), "cmp": (4, 4), "math": (4, 4)}
_ARITY |= {"fn": (2, None)}
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
COMPARISONS = frozenset(_COMPARE)
ARITHMETIC = frozenset(_MATH)


class FlowError(Exception):
    """The program cannot go on with this payload: a condition reads a field that is not there or
    compares what cannot be compared, or a loop went round more times than its `max_iterations`."""

    def __init__(self, message: str, *, loop_limit: bool = False) -> None:
        super().__init__(message)
        self.loop_limit = loop_limit
        self.payload: Any = None  # the payload the program was deciding on, once known (`asya.flows`)


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
        if current[0] == "obj" and len(current) % 2 == 0:
            raise ValueError("obj takes its keys and values in pairs")
        if current[0] == "lit" and not is_plain(current[1]):
            raise ValueError(f"a literal is a string, a number, a boolean or null, not {current[1]!r}")
        first = 2 if named is not None else 1
        pending.extend((operand, depth + 1) for operand in (current[first:] if current[0] != "lit" else ()))


def evaluate(expression: list[Any], payload: Any) -> Any:
    """The value of a condition's expression tree over `payload`, within one decision's budget."""
    return Budget().evaluate(expression, payload)


class Budget:
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
        with _as_flow_error():
            return _value(expression, _Scope(payload, self))


@contextmanager
def _as_flow_error() -> Iterator[None]:
    """What Python would raise computing an expression, and what the bounds refuse, as a `FlowError`."""
    try:
        yield
    except KeyError as exc:
        raise FlowError(f"no field {exc.args[0]!r}") from None
    except IndexError:
        raise FlowError("an index past the end of a list") from None
    except (TypeError, ValueError, ArithmeticError) as exc:  # ArithmeticError: a division by zero, a bound
        raise FlowError(str(exc)) from None
    except (RecursionError, MemoryError) as exc:  # a payload nested too deep to compare, a bound missed
        raise FlowError(f"the expression cannot be computed: {type(exc).__name__}") from None


@dataclass(frozen=True, slots=True)
class _Scope:
    payload: Any
    budget: Budget


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


def _object(expression: list[Any], scope: _Scope) -> dict[str, Any]:
    """`{"k": e, …}`: keys are text, as JSON's are."""
    result: dict[str, Any] = {}
    for key, value in zip(expression[1::2], expression[2::2], strict=True):
        name = _value(key, scope)
        if not isinstance(name, str):
            raise TypeError(f"an object's keys are text, not a {type(name).__name__}")
        result[name] = _value(value, scope)
    return result


def assigned(payload: Any, path: list[Any], value: list[Any], budget: Budget) -> Any:
    """`payload` with `payload[k1][k2]… = value` (`path` the keys' expressions), as a new payload: the
    objects and lists along the path are copied (each costing its length), the rest shared, so the
    payload given is never changed (a handler's several outputs may share parts). The value written
    costs what it weighs, nested items and characters included: an edit that shares a part twice
    (`p["a"] = [p["a"], p["a"]]`) pays for both copies, so no run of edits makes a payload that would
    take more than `MAX_STEPS` to write out."""
    with _as_flow_error():
        written = _value(value, _Scope(payload, budget))
        budget.read_whole(written)
    return placed(payload, path, written, budget)


def placed(payload: Any, path: list[Any], value: Any, budget: Budget) -> Any:
    """`payload` with `value` at the keys `path`'s expressions give, as a new payload (`assigned`); the
    value is not weighed here: it is one the caller computed, or outputs the mesh already carried."""
    with _as_flow_error():
        scope = _Scope(payload, budget)
        return _replaced(payload, [_value(key, scope) for key in path], value, budget)


def _replaced(container: Any, keys: list[Any], value: Any, budget: Budget) -> Any:
    """A copy of `container` with `value` at `keys` (the first key `container`'s own)."""
    key, rest = keys[0], keys[1:]
    if isinstance(container, dict):
        if not isinstance(key, str):
            raise TypeError(f"an object's keys are text, not a {type(key).__name__}")
        copy: Any = dict(container)
    elif isinstance(container, list):
        if type(key) is not int:
            raise TypeError(f"a list's index is a whole number, not a {type(key).__name__}")
        if not -len(container) <= key < len(container):  # as Python's assignment refuses it
            raise IndexError(key)
        copy = list(container)
    else:
        raise TypeError(f"an edit writes into an object or a list, not a {type(container).__name__}")
    budget.spend(len(copy))
    copy[key] = _replaced(container[key], rest, value, budget) if rest else value
    return copy


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
    "obj": _object,
    "and": _all_of,
    "or": _any_of,
    "not": lambda e, scope: not _value(e[1], scope),
    "neg": lambda e, scope: -_number(_value(e[1], scope)),
    "cmp": _compare,
    "math": _arithmetic,
    "fn": _function,
}
