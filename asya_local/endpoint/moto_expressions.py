"""Make moto's DynamoDB update and condition expressions cheaper to evaluate: `apply_expression_speedups()`
patches moto 5.2.5 in place, answering every request as before.

A hop's claim is one conditional `UpdateItem` with about a dozen `SET` actions, and on the local
endpoint it cost about 10 ms of CPU: two thirds of the endpoint's time in `bench/local_mesh`, which
bounds how fast the whole local mesh moves. Most of that was moto doing the same work again:

- it parsed the update expression twice per request (the handler, then the backend), although the
  expression is a fixed string per code path and its values come separately. The parsed tree is now
  kept per expression string: no caller changes it (the validator works on its own copy of it);
- it lexed the condition expression twice per request too. The tokens depend on the expression
  string alone (names and values are resolved after), so they are kept per expression as well;
- its action-count and overlapping-paths checks ran at every `UpdateExpression` node of the tree
  (nearly every node is one), each time collecting all the clauses or actions below it: quadratic in
  the number of actions. What is under the root includes what is under every other node, so
  checking the root alone refuses the same expressions (of an expression with several overlapping
  pairs of paths, the message may name another pair);
- every traverser of the tree rebuilt its node-type map for every node it visited;
- the validator copied the tree (and any list it appends to) with `copy.deepcopy`. Unpickling makes
  the same copy (the tree's nodes and values are plain objects) in a fraction of the time; a parsed
  tree is pickled once, when it is parsed. Anything that cannot be pickled is still copied with
  `deepcopy`.

Together they take a claim from about 9.5 to 4.3 ms in one process, client included, and from 10.1 to
5.3 ms of the endpoint's CPU in `bench/local_mesh`, which prints the CPU of each operation.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import pickle
from collections import deque
from collections.abc import Callable
from typing import Any

from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing import validators
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, UpdateExpression  # type: ignore[attr-defined]
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator

_PARSE = UpdateExpressionParser.make
_LEX = ConditionExpressionParser._lex_condition_expression


@functools.lru_cache(maxsize=512)
def _parsed(expression: str) -> Any:
    """The expression's tree, keeping its own pickled form: the validator's copies are made from it
    rather than by pickling the same unchanging tree again for every request."""
    tree = _PARSE(expression)
    with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError):
        tree._asya_pickled = pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)  # a copy made from it has none
    return tree


def _copy(value: Any) -> Any:
    """The validator's copy of a tree (or of a list it appends to)."""
    pickled = getattr(value, "_asya_pickled", None)
    try:
        return pickle.loads(pickled or pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(value)


@functools.lru_cache(maxsize=512)
def _lexed(expression: str) -> tuple[Any, ...]:
    """The condition's tokens: immutable tuples whose (empty) child lists no later step changes."""
    return tuple(_LEX(ConditionExpressionParser(expression, None, None)))


def _lex_condition(parser: ConditionExpressionParser) -> deque[Any]:
    return deque(_lexed(parser.condition_expression))  # a deque of its own: parsing consumes it


def _processing_map(traverser: Any) -> tuple[dict[type, Any], tuple[type, ...]]:
    """The traverser's node-type map and its types, built once (the map only names the traverser's
    own methods)."""
    built: tuple[dict[type, Any], tuple[type, ...]] | None = traverser.__dict__.get("_asya_map")
    if built is None:
        found = traverser._processing_map()
        built = traverser.__dict__["_asya_map"] = (found, tuple(found))
    return built


def _nodes_to_be_processed(traverser: Any) -> tuple[type, ...]:
    return _processing_map(traverser)[1]


def _process(traverser: Any, node: Any) -> Any:
    for node_type, processor in _processing_map(traverser)[0].items():
        if isinstance(node, node_type):
            return processor(node)
    return None


def _at_root(check: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A validator's walk that runs its check on the root only: what is under the root includes what
    is under every other node, so the check refuses the same expressions."""

    def traverse(validator: Any, node: Any) -> Any:
        if isinstance(node, UpdateExpression):
            check(validator, node)
        return node

    return traverse


def apply_expression_speedups() -> None:
    """Patch moto's update-expression parsing and validation in this process (idempotent)."""
    if getattr(UpdateExpressionParser, "_asya_speedups", False):
        return
    setattr(UpdateExpressionParser, "make", staticmethod(_parsed))  # noqa: B010 - mypy: no method-assign
    setattr(DepthFirstTraverser, "nodes_to_be_processed", _nodes_to_be_processed)  # noqa: B010
    setattr(DepthFirstTraverser, "process", _process)  # noqa: B010
    setattr(ActionCountValidator, "traverse", _at_root(ActionCountValidator.verify_action_counts))  # noqa: B010
    setattr(OverlappingPathsValidator, "traverse", _at_root(OverlappingPathsValidator.check_for_overlapping_paths))  # noqa: B010
    setattr(ConditionExpressionParser, "_lex_condition_expression", _lex_condition)  # noqa: B010
    setattr(validators, "deepcopy", _copy)  # noqa: B010
    setattr(UpdateExpressionParser, "_asya_speedups", True)  # noqa: B010
