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
- the validator copied the tree with `copy.deepcopy`; a pickle round trip makes the same copy (the
  tree's nodes and values are plain objects) in a fraction of the time. Anything that cannot be
  pickled is still copied with `deepcopy`.

Together they take a claim from about 9.5 to 4.3 ms in one process, client included, and from 10.1 to
5.3 ms of the endpoint's CPU in `bench/local_mesh`, which prints the CPU of each operation.
"""

from __future__ import annotations

import copy
import functools
import pickle
from collections import deque
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
    return _PARSE(expression)


@functools.lru_cache(maxsize=512)
def _lexed(expression: str) -> tuple[Any, ...]:
    """The condition's tokens: immutable tuples whose (empty) child lists no later step changes."""
    return tuple(_LEX(ConditionExpressionParser(expression, None, None)))


def _lex_condition(parser: ConditionExpressionParser) -> deque[Any]:
    return deque(_lexed(parser.condition_expression))  # a deque of its own: parsing consumes it


def _processing_map(traverser: Any) -> dict[type, Any]:
    """The traverser's node-type map, built once (it only names the traverser's own methods)."""
    found: dict[type, Any] | None = traverser.__dict__.get("_asya_map")
    if found is None:
        found = traverser.__dict__["_asya_map"] = traverser._processing_map()
        traverser.__dict__["_asya_types"] = tuple(found)
    return found


def _nodes_to_be_processed(traverser: Any) -> tuple[type, ...]:
    _processing_map(traverser)
    types: tuple[type, ...] = traverser.__dict__["_asya_types"]
    return types


def _process(traverser: Any, node: Any) -> Any:
    for node_type, processor in _processing_map(traverser).items():
        if isinstance(node, node_type):
            return processor(node)
    return None


def _count_actions_at_root(validator: ActionCountValidator, node: Any) -> Any:
    if isinstance(node, UpdateExpression):
        validator.verify_action_counts(node)
    return node


def _check_paths_at_root(validator: OverlappingPathsValidator, node: Any) -> Any:
    if isinstance(node, UpdateExpression):
        validator.check_for_overlapping_paths(node)
    return node


def _copy_tree(tree: Any) -> Any:
    try:
        return pickle.loads(pickle.dumps(tree, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(tree)


def apply_expression_speedups() -> None:
    """Patch moto's update-expression parsing and validation in this process (idempotent)."""
    if getattr(UpdateExpressionParser, "_asya_speedups", False):
        return
    setattr(UpdateExpressionParser, "make", staticmethod(_parsed))  # noqa: B010 - mypy: no method-assign
    setattr(DepthFirstTraverser, "nodes_to_be_processed", _nodes_to_be_processed)  # noqa: B010
    setattr(DepthFirstTraverser, "process", _process)  # noqa: B010
    setattr(ActionCountValidator, "traverse", _count_actions_at_root)  # noqa: B010
    setattr(OverlappingPathsValidator, "traverse", _check_paths_at_root)  # noqa: B010
    setattr(ConditionExpressionParser, "_lex_condition_expression", _lex_condition)  # noqa: B010
    setattr(validators, "deepcopy", _copy_tree)  # noqa: B010
    setattr(UpdateExpressionParser, "_asya_speedups", True)  # noqa: B010
