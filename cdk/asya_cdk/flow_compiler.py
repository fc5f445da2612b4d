"""The flow compiler: a flow written as a Python function over the payload (docs/flows.md), read with
`ast` and never run, into the program `asya.flow_program` runs.

What it compiles, `p` being the function's one parameter (the payload):

    p = actor(p)                    p = c(b(p))                  p = pause(p)
    p = join(parallel(a(p), c(b(p))))                            return p / return actor(p)
    p["k"] = <expression>           p["a"][0] = …                p["n"] += <expression>
    if/elif/else <condition>        while bounded(<condition>, max_iterations=N): … break / continue
    try: … except Name / except (A, B): …                        pass, a docstring

Conditions read the payload and constants only (`asya.flow_program`: subscripts, `.get`, comparisons,
`and`/`or`/`not`, arithmetic, `len`/`abs`/`min`/`max`/`round`/`any`/`all`), and so do the values an
edit writes, which may also be object literals (`{"k": p["a"]}`). Anything else is a
`FlowCompileError` naming the file, the line and the construct.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya.flow_program import Program, digest
from asya.names import PAUSE
from asya_cdk.flow_expression_reader import MATH_OPS, ExpressionReader, FlowCompileError, construct
from asya_cdk.flow_maps import GATHER, is_map, mapping, reached

__all__ = ["FlowCompileError", "compile_flow", "program_location"]

# a program travels in every envelope of its tasks: this keeps it a small share of SQS's 1 MiB (and of
# the 64 KiB a message is billed by), about 150 statements
MAX_PROGRAM_BYTES = 16_384
MAX_ITERATIONS = 1_000  # the most a loop may declare: a task that needs more is a job, not a flow


@dataclass(frozen=True, slots=True)
class _Scope:
    """Where a statement sits: the loops around it (head, exit), innermost last, and the `except`
    clauses that take its calls' failures, innermost first."""

    loops: tuple[tuple[int, int], ...] = ()
    catches: tuple[tuple[list[str], int], ...] = ()
    in_branch: bool = False


@dataclass
class _Compiler(ExpressionReader):
    joins: Mapping[str, Sequence[str]] = field(default_factory=dict)  # join → the actors it gathers
    nodes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, where: ast.AST, scope: _Scope, **node: Any) -> int:
        node["line"] = getattr(where, "lineno", None)
        loops = [head for head, _ in scope.loops]
        if loops:
            node["in"] = loops
        self.nodes.append(node)
        return len(self.nodes) - 1

    # -- statements ------------------------------------------------------------------------------

    def block(self, statements: Sequence[ast.stmt], then: int, scope: _Scope) -> int:
        """The entry node of `statements`, which go on to `then`."""
        entry = then
        for statement in reversed(statements):
            entry = self.statement(statement, entry, scope)
        return entry

    def statement(self, statement: ast.stmt, then: int, scope: _Scope) -> int:
        if isinstance(statement, ast.Assign):
            return self.assign(statement, then, scope)
        if isinstance(statement, ast.AugAssign):
            return self.augmented(statement, then, scope)
        if isinstance(statement, ast.Return):
            end = self.add(statement, scope, **{"return": True})
            if statement.value is None or self._is_variable(statement.value):
                if statement.value is None:
                    raise self.fail(statement, f"return the payload: return {self.variable}")
                return end
            return self.calls(statement.value, end, scope)
        if isinstance(statement, ast.If):
            node = self.add(
                statement, scope, **{"if": self.condition(statement.test), "src": ast.unparse(statement.test)}
            )
            self.nodes[node]["then"] = self.block(statement.body, then, scope)
            self.nodes[node]["else"] = self.block(statement.orelse, then, scope)
            return node
        if isinstance(statement, ast.While):
            return self.loop(statement, then, scope)
        if isinstance(statement, ast.Break | ast.Continue):
            if not scope.loops:
                raise self.fail(statement, f"{type(statement).__name__.lower()} outside a while loop")
            head, exit_ = scope.loops[-1]
            return exit_ if isinstance(statement, ast.Break) else head
        if isinstance(statement, ast.Try):
            return self.attempt(statement, then, scope)
        if isinstance(statement, ast.Pass) or _is_docstring(statement):
            return then
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            raise self.fail(statement, self._called_alone(statement.value))
        raise self.fail(statement, f"{construct(statement)} is not part of a flow program (docs/flows.md)")

    def assign(self, statement: ast.Assign, then: int, scope: _Scope) -> int:
        target = statement.targets[0]
        if len(statement.targets) == 1 and isinstance(target, ast.Subscript):
            if is_map(statement.value):
                return self.mapped(statement, self._keys(target), then, scope)
            return self.edit(statement, self._keys(target), self.value(statement.value), then, scope)
        if len(statement.targets) != 1 or not self._is_variable(target):
            raise self.fail(
                statement,
                f"a flow assigns its payload, {self.variable} = actor({self.variable}), "
                f'or a field of it, {self.variable}["key"] = <expression>',
            )
        return self.calls(statement.value, then, scope)

    def augmented(self, statement: ast.AugAssign, then: int, scope: _Scope) -> int:
        """`p["n"] += 1`: the edit `p["n"] = p["n"] + 1`, numbers only, as any arithmetic."""
        if not isinstance(statement.target, ast.Subscript) or type(statement.op) not in MATH_OPS:
            only = f'{self.variable}["key"] += <expression> and the like'
            raise self.fail(statement, f"{construct(statement)} (only {only})")
        keys = self._keys(statement.target)
        value = ["math", MATH_OPS[type(statement.op)], self.condition(statement.target), self.value(statement.value)]
        return self.edit(statement, keys, value, then, scope)

    def edit(self, statement: ast.stmt, keys: list[Any], value: list[Any], then: int, scope: _Scope) -> int:
        """An edit of the payload: evaluated where the program is when it reaches it, no hop of its own."""
        return self.add(statement, scope, set=keys, value=value, next=then, src=ast.unparse(statement))

    def mapped(self, statement: ast.Assign, keys: list[Any], then: int, scope: _Scope) -> int:
        """`p["r"] = [a(x) for x in p["items"]]` / `map(a, p["items"])`: one branch per item to `a`, and
        one carrying the payload, gathered at `GATHER` (`asya_cdk.flow_maps`); then the outputs, in
        item order, go into the payload. A branch's failure fails the task (its join fails fast): no
        `except` takes it, as none takes a `parallel(…)` branch's."""
        try:
            actor, over = mapping(statement.value, self.variable)
        except ValueError as exc:
            raise self.fail(statement.value, str(exc)) from None
        src = ast.unparse(statement)
        unpack = self.add(statement, scope, gathered=keys, next=then, src=src)
        gather = self.add(statement, scope, call=GATHER, next=unpack)
        each = self.add(statement, scope, call=self.actor(actor), next=gather)
        return self.add(statement, scope, map=each, over=self.condition(over), gather=gather, src=src)

    def calls(self, expression: ast.expr, then: int, scope: _Scope) -> int:
        """`a(b(p))`: b, then a, then `then`; `join(parallel(…))`: the branches, gathered at `join`."""
        if self._is_variable(expression):
            return then
        if not isinstance(expression, ast.Call) or not isinstance(expression.func, ast.Name):
            raise self.fail(expression, f"expected an actor called on the payload, like actor({self.variable})")
        name = expression.func.id
        if name in ("parallel", "bounded"):
            raise self.fail(expression, self._misplaced(name))
        if len(expression.args) != 1 or expression.keywords:
            raise self.fail(expression, f"{name}(…) takes the payload alone: {name}({self.variable})")
        actor = PAUSE if name == "pause" else self.actor(expression.func)
        node = self.add(expression, scope, call=actor, next=then)
        if scope.catches and not scope.in_branch:
            self.nodes[node]["catch"] = [[names, target] for names, target in scope.catches]
        argument = expression.args[0]
        if isinstance(argument, ast.Call) and isinstance(argument.func, ast.Name) and argument.func.id == "parallel":
            return self.parallel(argument, node, scope)
        return self.calls(argument, node, scope)

    def parallel(self, expression: ast.Call, join: int, scope: _Scope) -> int:
        actor = self.nodes[join]["call"]
        if actor == PAUSE or actor not in self.joins:
            raise self.fail(
                expression,
                f"{actor} is given parallel(…)'s branches but is not a join: declare actors.{actor}.join "
                "with branches_of naming the actor before parallel(…)",
            )
        if len(expression.args) < 2 or expression.keywords:
            raise self.fail(expression, "parallel(…) takes two or more branches, each actors called on the payload")
        branch_scope = _Scope(scope.loops, scope.catches, in_branch=True)
        branches = []
        for branch in expression.args:
            if self._is_variable(branch):
                raise self.fail(branch, "each branch of parallel(…) calls at least one actor")
            branches.append(self.calls(branch, join, branch_scope))
        return self.add(expression, scope, parallel=branches, join=join)

    def loop(self, statement: ast.While, then: int, scope: _Scope) -> int:
        test = statement.test
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "bounded"):
            raise self.fail(statement, "a loop declares its bound: while bounded(<condition>, max_iterations=N):")
        limit = next((keyword.value for keyword in test.keywords if keyword.arg == "max_iterations"), None)
        if len(test.args) != 1 or len(test.keywords) != 1 or not _is_count(limit):
            raise self.fail(statement, f"bounded(<condition>, max_iterations=N) with N from 1 to {MAX_ITERATIONS}")
        if statement.orelse:
            raise self.fail(statement.orelse[0], "while … else is not part of a flow program")
        head = len(self.nodes)
        loops = (*scope.loops, (head, then))
        node = self.add(
            statement,
            _Scope(loops, scope.catches, scope.in_branch),
            **{"while": self.condition(test.args[0]), "max": limit.value, "src": ast.unparse(test.args[0])},  # type: ignore[union-attr]
        )
        self.nodes[node]["exit"] = then
        self.nodes[node]["body"] = self.block(statement.body, node, _Scope(loops, scope.catches, scope.in_branch))
        return node

    def attempt(self, statement: ast.Try, then: int, scope: _Scope) -> int:
        if statement.orelse or statement.finalbody:
            raise self.fail(statement, "try … else and try … finally are not part of a flow program")
        clauses: list[tuple[list[str], int]] = []
        for handler in statement.handlers:
            if handler.type is None:
                raise self.fail(handler, "name what is caught: except Exception: (or a type, or a reason)")
            if handler.name is not None:
                raise self.fail(handler, f"except … as {handler.name}: the error is in the header x-asya-caught")
            clauses.append((self._caught(handler.type), self.block(handler.body, then, scope)))
        inner = _Scope(scope.loops, (*clauses, *scope.catches), scope.in_branch)
        return self.block(statement.body, then, inner)

    def _caught(self, expression: ast.expr) -> list[str]:
        items = expression.elts if isinstance(expression, ast.Tuple) else [expression]
        names = []
        for item in items:
            if isinstance(item, ast.Attribute):
                names.append(item.attr)
            elif isinstance(item, ast.Name):
                names.append(item.id)
            else:
                raise self.fail(item, "except names exception types or reasons: except (ValueError, Timeout):")
        return names

    # -- names -----------------------------------------------------------------------------------

    def actor(self, name: ast.Name) -> str:
        for candidate in (name.id, name.id.replace("_", "-")):
            if candidate in self.actors:
                return candidate
        known = ", ".join(sorted(self.actors))
        raise self.fail(name, f"{name.id} is not an actor of this mesh (actors: {known})")

    def _called_alone(self, call: ast.Call) -> str:
        """Why a call on its own line is refused: an actor's output would be lost; anything else
        (`print(p)`, `log.info(…)`) is not something a flow can do."""
        name = ast.unparse(call.func)
        if isinstance(call.func, ast.Name) and (name == "pause" or self._is_actor(name)):
            return f"an actor's output is the new payload: write {self.variable} = {name}({self.variable})"
        return f"{name}(…) is not part of a flow program: a flow calls actors, {self.variable} = actor({self.variable})"

    def _misplaced(self, name: str) -> str:
        if name == "parallel":
            return f"parallel(…) is given to the actor that joins its branches: {self.variable} = join(parallel(…))"
        return "bounded(…) is the test of a while loop"

    # -- the whole -------------------------------------------------------------------------------

    def check(self, start: int) -> None:
        """What the program may not do at run time, refused now: do anything before calling an actor
        (the gateway starts a task at one actor), or fan out right after a pause (x-resume sends one
        envelope) or from an actor its join does not gather."""
        for node in self._reached(start):
            current = self.nodes[node]
            if "return" in current:
                raise self.fail(current["line"], "the flow returns before calling any actor")
            if "parallel" in current:
                raise self.fail(current["line"], "parallel(…) needs an actor before it, whose output it fans out")
            if "map" in current:
                raise self.fail(current["line"], "a map needs an actor before it, whose output it maps over")
        for current in self.nodes:
            if "call" not in current:
                continue
            for node in self._reached(current["next"]):
                if "parallel" in self.nodes[node]:
                    self._check_fan(current, self.nodes[node])
                if "map" in self.nodes[node] and current["call"] == PAUSE:
                    raise self.fail(
                        self.nodes[node]["line"],
                        f"a map cannot follow the pause at line {current['line']}: call an actor between them",
                    )
            for _, target in current.get("catch", []):
                for node in self._reached(target):
                    if "map" in self.nodes[node]:
                        raise self.fail(
                            self.nodes[node]["line"], "a map cannot start an except: call an actor before it"
                        )

    def _check_fan(self, call: Mapping[str, Any], fan: Mapping[str, Any]) -> None:
        join, before = self.nodes[fan["join"]]["call"], call["call"]
        if before == PAUSE:
            raise self.fail(
                fan["line"], f"parallel(…) can follow the pause at line {call['line']}: call an actor between them"
            )
        if before not in self.joins.get(join, ()):
            raise self.fail(
                fan["line"],
                f"parallel(…) fans out {before}'s output, so {join} must gather {before}'s branches: "
                f"add {before} to actors.{join}.join.branches_of",
            )

    def _reached(self, node: int) -> set[int]:
        return reached(self.nodes, node)


def compile_flow(
    file: Path, function: str, *, source: str, actors: Mapping[str, Any], joins: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """The program of `function` in `file` (`source`: the file as the mesh names it). `actors`: the
    mesh's actors by name; `joins`: each join actor's `branches_of`."""
    try:
        tree = ast.parse(file.read_text(), filename=str(file))
    except OSError as exc:
        raise FlowCompileError(f"{source}: cannot read: {exc.strerror}") from None
    except SyntaxError as exc:
        raise FlowCompileError(f"{source} line {exc.lineno}: not valid Python: {exc.msg}") from None
    definition = next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
        ),
        None,
    )
    if definition is None:
        raise FlowCompileError(f"{source}: no function {function}(…) at the top level")
    compiler = _Compiler(source, actors, joins=joins)
    arguments = definition.args
    if len(arguments.args) != 1 or arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        raise compiler.fail(definition, f"{function}(…) takes one parameter, the payload")
    if isinstance(definition, ast.AsyncFunctionDef) or definition.decorator_list:
        raise compiler.fail(definition, f"{function}(…) is a plain function, without async or decorators")
    compiler.variable = arguments.args[0].arg
    end = compiler.add(definition, _Scope(), **{"return": True})
    start = compiler.block(definition.body, end, _Scope())
    compiler.check(start)
    body = {"flow": function, "source": source, "start": start, "nodes": compiler.nodes}
    written = json.dumps(body, sort_keys=True, separators=(",", ":"))
    if len(written.encode()) > MAX_PROGRAM_BYTES:
        raise FlowCompileError(
            f"{source}: {function}(…) compiles to {len(written.encode()):,} bytes, over {MAX_PROGRAM_BYTES:,}: "
            "a program travels in every envelope of its tasks; split it into flows, or move work into actors"
        )
    program = {**body, "version": digest(body)}
    try:  # within the evaluator's bounds (a condition's depth and size): what a sidecar would refuse
        Program(program).check()
    except ValueError as exc:
        raise FlowCompileError(str(exc)) from None
    Program(program).shortest(start)  # every node measured once: a program it cannot measure fails here
    return program


def program_location(reference: str) -> tuple[str, str]:
    """`flows.triage` → (`flows.py`, `triage`): the file, from the mesh file's folder, and the function."""
    module, _, function = reference.rpartition(".")
    return module.replace(".", "/") + ".py", function


def _is_count(value: ast.expr | None) -> bool:
    return isinstance(value, ast.Constant) and type(value.value) is int and 1 <= value.value <= MAX_ITERATIONS


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
