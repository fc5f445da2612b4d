"""Make moto's DynamoDB update and condition expressions cheaper to evaluate: `apply_expression_speedups()`
patches moto 5.2.5 in place, answering every request as before.

A hop's claim is one conditional `UpdateItem` with about a dozen `SET` actions, and on the local
endpoint it cost about 10 ms of CPU: two thirds of the endpoint's time in `bench/local_mesh`, which
bounds how fast the whole local mesh moves. Most of that was moto doing the same work again:

- it parsed the update expression twice per request (the handler, then the backend), although the
  expression is a fixed string per code path and its values come separately. The parsed tree is now
  kept per expression string: no caller changes it (the validator works on its own copy of it);
- it parsed the condition expression twice per request too (the handler, for the names and values
  it uses, then the backend). Its syntax tree depends on the expression, its names and which values
  it is given, not on what the values are: it is kept per expression, names and value names, parsed
  once with a placeholder per value, and each request makes its condition from the kept tree with
  its own values. An expression that does not parse is parsed again as moto parses it, for moto's error;
- its action-count and overlapping-paths checks ran at every `UpdateExpression` node of the tree
  (nearly every node is one), each time collecting all the clauses or actions below it: quadratic in
  the number of actions. What is under the root includes what is under every other node, so
  checking the root alone refuses the same expressions (of an expression with several overlapping
  pairs of paths, the message may name another pair);
- its eight walks of the tree (a claim's tree has about 90 nodes) rebuilt each walker's node-type
  map at every node, and found each node's step with `isinstance` checks against the nodes' classes,
  abstract base classes whose checks run in Python, as did its search for clauses. The walk below
  takes the same steps in the same order with each check made once per class;
- the validator copied the tree (and any list it appends to) with `copy.deepcopy`. Unpickling makes
  the same copy (the tree's nodes and values are plain objects) in a fraction of the time; a parsed
  tree is pickled once, when it is parsed. Anything that cannot be pickled is still copied with
  `deepcopy`.

The second profile's changes (the kept update expressions and condition tokens, the checks at the
root, the maps built once, the pickled copy) took a claim from about 9.5 to 4.3 ms in one process,
client included, and from 10.1 to 5.3 ms of the endpoint's CPU in `bench/local_mesh`, which prints the
CPU of each operation; the third's (the kept condition trees, the walks by class) took it from
7.4-10.2 to 4.6-5.3 ms in one process, in alternating runs on a busier machine (docs/cost.md, "The
local mesh", numbers its profiles).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import pickle
from collections.abc import Callable
from typing import Any

from moto.dynamodb.comparisons import AttributeValue, ConditionExpressionParser
from moto.dynamodb.parsing import validators
from moto.dynamodb.parsing.ast_nodes import (  # type: ignore[attr-defined]
    DepthFirstTraverser,
    Expression,
    Node,
    UpdateExpression,
    UpdateExpressionFunction,
)
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator

_PARSE = UpdateExpressionParser.make
_PARSE_CONDITION = ConditionExpressionParser.parse
_MAKE_OPERAND = ConditionExpressionParser._make_operand
_PLACEHOLDER: Any = {"NULL": True}  # what each value is while a kept tree is parsed


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


class _Template(ConditionExpressionParser):
    """A parse that keeps the syntax tree it makes its condition from."""

    tree: Any = None

    def _make_op_condition(self, node: Any) -> Any:
        if self.tree is None:
            self.tree = node
        return super()._make_op_condition(node)


@functools.lru_cache(maxsize=512)
def _condition_template(
    expression: str, names: tuple[tuple[str, str], ...], value_names: frozenset[str]
) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    """A condition's syntax tree and the names and values it uses. The tree depends on the expression,
    its names (resolved while parsing) and which values it is given, not on what they are (each value
    is only carried to its operand), so it is parsed once with a placeholder for each value."""
    template = _Template(expression, dict(names), dict.fromkeys(value_names, _PLACEHOLDER))
    _PARSE_CONDITION(template)
    return template.tree, tuple(template.expr_attr_names_found), tuple(template.expr_attr_values_found)


def _parse_condition(parser: ConditionExpressionParser) -> Any:
    """The condition made from its kept tree and this request's values. An expression that does not
    parse is parsed as moto would, for its own error."""
    names, values = parser.expression_attribute_names, parser.expression_attribute_values
    if not parser.condition_expression or names is None or values is None:
        return _PARSE_CONDITION(parser)
    try:
        tree, names_found, values_found = _condition_template(
            parser.condition_expression, tuple(sorted(names.items())), frozenset(values)
        )
    except Exception:  # noqa: BLE001 - whatever it was, moto's own parse raises it with the real values
        return _PARSE_CONDITION(parser)
    parser.expr_attr_names_found.extend(names_found)
    parser.expr_attr_values_found.extend(values_found)
    return parser._make_op_condition(tree)


def _make_operand(parser: ConditionExpressionParser, node: Any) -> Any:
    """A value operand takes its value from the request by its name (`:name`, the node's text) rather
    than from the node, which in a kept tree holds the placeholder."""
    if node.kind == ConditionExpressionParser.Kind.EXPRESSION_ATTRIBUTE_VALUE:
        return AttributeValue(parser._lookup_expression_attribute_value(node.text))
    return _MAKE_OPERAND(parser, node)


_IS_NODE: dict[type, bool] = {}
_HOLDS_CLAUSES: dict[type, bool] = {}
_MAP_KEYS: dict[tuple[type, type], type | None] = {}  # (traverser class, node class) -> its key in the map
_NO_PRE_PROCESSING = DepthFirstTraverser.pre_processing_of_child


def _is_a(known: dict[type, bool], value: Any, classes: type | tuple[type, ...]) -> bool:
    """`isinstance(value, classes)`, answered once per class of value (`known` keeps the answers)."""
    value_type = type(value)
    found = known.get(value_type)
    if found is None:
        found = known[value_type] = issubclass(value_type, classes)
    return found


def _is_node(value: Any) -> bool:
    return _is_a(_IS_NODE, value, Node)


class _Dispatch(dict[type, Any]):
    """What one traverser does with a node of each class, as moto's `process` finds it (the first key
    of its map the node is an instance of), looked up by class rather than by an `isinstance` of each
    key: the nodes' classes are abstract base classes, whose checks run in Python."""

    def __init__(self, traverser: Any) -> None:
        super().__init__()
        self.traverser = traverser
        self.processing_map = traverser._processing_map()  # it only names the traverser's own methods
        overridden = type(traverser).pre_processing_of_child is not _NO_PRE_PROCESSING
        self.pre_processing_of_child = traverser.pre_processing_of_child if overridden else None

    def __missing__(self, node_type: type) -> Any:
        pair = (type(self.traverser), node_type)
        if pair not in _MAP_KEYS:
            _MAP_KEYS[pair] = next((key for key in self.processing_map if issubclass(node_type, key)), None)
        key = _MAP_KEYS[pair]
        processor = self[node_type] = None if key is None else self.processing_map[key]
        return processor


def _traverse_node_recursively(traverser: Any, node: Any, child_id: int = -1) -> Any:
    """moto's depth-first walk of the tree: children first, then the node processed and put in its
    parent's place."""
    if not _is_node(node):
        return node
    dispatch = traverser.__dict__.get("_asya_dispatch")
    if dispatch is None:
        dispatch = traverser.__dict__["_asya_dispatch"] = _Dispatch(traverser)
    return _walk(dispatch, node, child_id)


def _walk(dispatch: _Dispatch, node: Any, child_id: int) -> Any:
    """One node of `_traverse_node_recursively`'s walk, step for step as moto's: each child announced
    to the traverser (when it listens), each child that is a node walked, then the node processed."""
    parent_node = node.parent
    children = node.children
    if children is not None:
        pre_processing_of_child = dispatch.pre_processing_of_child
        for i, child_node in enumerate(children):
            if pre_processing_of_child is not None:
                pre_processing_of_child(node, i)
            if _is_node(child_node):
                _walk(dispatch, child_node, i)
    processor = dispatch[type(node)]
    if processor is not None:
        node = processor(node)
        node.parent = parent_node
        if parent_node:
            parent_node.children[child_id] = node
    return node


def _find_clauses(node: Any, clause_types: Any) -> list[Any]:
    """moto's `Node.find_clauses`, with its class checks (on abstract base classes) made once per class."""
    clauses: list[Any] = []
    for child in node.children or []:
        if type(child) in clause_types:
            clauses.append(child)
        elif _is_a(_HOLDS_CLAUSES, child, (Expression, UpdateExpressionFunction)):
            clauses.extend(_find_clauses(child, clause_types))
    return clauses


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
    setattr(DepthFirstTraverser, "traverse_node_recursively", _traverse_node_recursively)  # noqa: B010
    setattr(Node, "find_clauses", _find_clauses)  # noqa: B010
    setattr(ActionCountValidator, "traverse", _at_root(ActionCountValidator.verify_action_counts))  # noqa: B010
    setattr(OverlappingPathsValidator, "traverse", _at_root(OverlappingPathsValidator.check_for_overlapping_paths))  # noqa: B010
    setattr(ConditionExpressionParser, "parse", _parse_condition)  # noqa: B010
    setattr(ConditionExpressionParser, "_make_operand", _make_operand)  # noqa: B010
    setattr(validators, "deepcopy", _copy)  # noqa: B010
    setattr(UpdateExpressionParser, "_asya_speedups", True)  # noqa: B010
