"""Reading a flow program's expressions (docs/flows.md): the conditions of its decisions and loops and
the values and keys of its edits, from Python's `ast` into the trees `asya.flow_expressions` evaluates.

What a condition may read: the payload and constants, subscripts, `.get`, comparisons, `and`/`or`/
`not`, arithmetic, lists, object literals and the functions `asya.flow_expressions.FUNCTIONS` names.
Anything else is a `FlowCompileError` naming the file, the line and the construct.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asya.flow_expressions import ARITHMETIC, FUNCTIONS, is_plain

COMPARE_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
MATH_OPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
}
assert set(MATH_OPS.values()) == ARITHMETIC


class FlowCompileError(ValueError):
    """The flow cannot be compiled; the message names the file, the line and the construct."""


@dataclass
class ExpressionReader:
    """What reads a program's expressions needs: the file's name for messages, the mesh's actors (an
    actor called inside an expression is refused with the form that calls one), and the payload's name."""

    source: str  # as the mesh file names it, for messages and the program
    actors: Mapping[str, Any]  # the mesh's actors by name
    variable: str = "p"

    def fail(self, where: ast.AST | int | None, message: str) -> FlowCompileError:
        """The error at `where` (a construct, or a line)."""
        line = where if isinstance(where, int) or where is None else getattr(where, "lineno", None)
        return FlowCompileError(f"{self.source} line {line if line is not None else '?'}: {message}")

    def _keys(self, target: ast.Subscript) -> list[Any]:
        """`p["a"][0]` as the keys' expressions, outermost first; the subscripted thing must be `p`."""
        keys: list[Any] = []
        current: ast.expr = target
        while isinstance(current, ast.Subscript):
            if isinstance(current.slice, ast.Slice):
                raise self.fail(current, "an edit writes one field, not a slice")
            keys.insert(0, self.condition(current.slice))
            current = current.value
        if not self._is_variable(current):
            raise self.fail(target, f'an edit writes a field of the payload: {self.variable}["key"] = <expression>')
        return keys

    def value(self, expression: ast.expr) -> list[Any]:
        """What an edit writes: an expression as a condition's, read with the same evaluator; an actor
        called in it is refused with the form that calls one."""
        if (
            isinstance(expression, ast.Call)
            and isinstance(expression.func, ast.Name)
            and self._is_actor(expression.func.id)
        ):
            name = expression.func.id
            raise self.fail(
                expression,
                f"{name} is an actor: an edit does not call one; {self.variable} = {name}({self.variable}) does",
            )
        return self.condition(expression)

    def _is_variable(self, expression: ast.AST) -> bool:
        return isinstance(expression, ast.Name) and expression.id == self.variable

    def _is_actor(self, name: str) -> bool:
        return name in self.actors or name.replace("_", "-") in self.actors

    def condition(self, expression: ast.expr) -> list[Any]:
        if self._is_variable(expression):
            return ["var"]
        if isinstance(expression, ast.Constant) and is_plain(expression.value):
            return ["lit", expression.value]
        if isinstance(expression, ast.Subscript):
            if isinstance(expression.slice, ast.Slice):
                raise self.fail(expression, "slices are not part of a condition")
            return ["at", self.condition(expression.value), self.condition(expression.slice)]
        if isinstance(expression, ast.Compare):
            parts = [expression.left, *expression.comparators]
            compared = [
                ["cmp", COMPARE_OPS[type(op)], self.condition(left), self.condition(right)]
                for op, left, right in zip(expression.ops, parts, parts[1:], strict=False)
            ]
            return compared[0] if len(compared) == 1 else ["and", *compared]
        if isinstance(expression, ast.BoolOp):
            return ["and" if isinstance(expression.op, ast.And) else "or", *map(self.condition, expression.values)]
        if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Not | ast.USub):
            return ["not" if isinstance(expression.op, ast.Not) else "neg", self.condition(expression.operand)]
        if isinstance(expression, ast.BinOp) and type(expression.op) in MATH_OPS:
            op = MATH_OPS[type(expression.op)]
            return ["math", op, self.condition(expression.left), self.condition(expression.right)]
        if isinstance(expression, ast.List | ast.Tuple | ast.Dict):
            return self._literal(expression)
        if isinstance(expression, ast.Call):
            return self._function(expression)
        if isinstance(expression, ast.Name):
            raise self.fail(
                expression, f"{expression.id}: a condition reads the payload ({self.variable}) and constants"
            )
        raise self.fail(expression, f"{construct(expression)} is not part of a condition (docs/flows.md)")

    def _literal(self, expression: ast.List | ast.Tuple | ast.Dict) -> list[Any]:
        """A list (a tuple is one) or an object, each item an expression; an object names every key."""
        if not isinstance(expression, ast.Dict):
            return ["list", *map(self.condition, expression.elts)]
        parts: list[Any] = ["obj"]
        for key, value in zip(expression.keys, expression.values, strict=True):
            if key is None:
                raise self.fail(expression, "**: an object literal names each of its keys")
            parts += [self.condition(key), self.condition(value)]
        return parts

    def _function(self, expression: ast.Call) -> list[Any]:
        func = expression.func
        if expression.keywords:
            raise self.fail(expression, "keyword arguments are not part of a condition")
        if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(expression.args) <= 2:
            default = self.condition(expression.args[1]) if len(expression.args) == 2 else ["lit", None]
            return ["get", self.condition(func.value), self.condition(expression.args[0]), default]
        if isinstance(func, ast.Name) and func.id in FUNCTIONS:
            return ["fn", func.id, *map(self.condition, expression.args)]
        name = ast.unparse(func)
        if isinstance(func, ast.Name) and self._is_actor(func.id):
            raise self.fail(
                expression,
                f"{name} is an actor: call it before the condition, {self.variable} = {name}({self.variable})",
            )
        raise self.fail(expression, f"{name}(…) is not part of a condition (only .get and {', '.join(FUNCTIONS)})")


def construct(node: ast.AST) -> str:
    """What a construct is called, for messages: `for`, `with`, `import`, a call of `print`."""
    words: dict[type[ast.AST], str] = {
        ast.For: "a for loop (use while bounded(…, max_iterations=N))",
        ast.With: "with",
        ast.Import: "import",
        ast.ImportFrom: "import",
        ast.Raise: "raise",
        ast.AugAssign: "an augmented assignment",
        ast.Lambda: "lambda",
        ast.Attribute: f"the attribute {ast.unparse(node)}",
    }
    return words.get(type(node), type(node).__name__)
