"""DynamoDB's fine-grained condition keys, computed from a request as IAM sees it, so that a role held
to some attributes of a table (`asya.task_attributes`) is refused locally what AWS refuses it.

The rule followed (DynamoDB developer guide, "Using IAM policy conditions for fine-grained access
control"; IAM's "Allows access to specific attributes" example):

- `dynamodb:Attributes`: the top-level attribute names the request names, the key's included (AWS
  asks a policy that uses the key to list the table's key attributes). Counted here: the `Key` (or a
  put's `Item`), and every attribute an `UpdateExpression`, a `ConditionExpression` and a
  `ProjectionExpression` name (aliases resolved through `ExpressionAttributeNames`; of a path such as
  `fans.v` or `hops[0]`, its first element), and the legacy `AttributesToGet`. AWS's pages do not say
  whether a condition's attributes count; counting them can only refuse more, never allow what AWS
  refuses, so a policy written against this evaluator holds on AWS.
- `dynamodb:Select`: for a read, `SPECIFIC_ATTRIBUTES` when it projects, else `ALL_ATTRIBUTES` (or
  the request's own `Select`, for a query or scan).
- `dynamodb:ReturnValues`: the request's `ReturnValues`, `NONE` when absent (DynamoDB's default).
  `ReturnValuesOnConditionCheckFailure` has no condition key on AWS and none here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# Operations whose request names attributes (a transaction's actions are checked as these).
READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem", "ConditionCheckItem"})
_EXPRESSIONS = ("UpdateExpression", "ConditionExpression", "ProjectionExpression")
_TOKEN = re.compile(r"[#:]?[A-Za-z_][A-Za-z0-9_]*|\[\s*\d+\s*\]|\S")
_KEYWORDS = frozenset({"set", "remove", "add", "delete", "and", "or", "not", "between", "in"})


def expression_attributes(expression: str, names: Mapping[str, str]) -> Iterator[str]:
    """The top-level attributes an expression names: each path's first element, aliases resolved;
    values (`:v`), functions (a name before `(`) and keywords left out."""
    tokens = _TOKEN.findall(expression)
    for index, token in enumerate(tokens):
        if token[0] == ":" or not (token[0] == "#" or token[0].isalpha() or token[0] == "_"):
            continue
        if index and tokens[index - 1] == ".":  # a path's later element: `fans.v`'s `v`
            continue
        if index + 1 < len(tokens) and tokens[index + 1] == "(":  # a function: `if_not_exists(`
            continue
        if token[0] != "#" and token.lower() in _KEYWORDS:
            continue
        yield names.get(token, token) if token[0] == "#" else token


def request_attributes(request: Mapping[str, Any]) -> set[str]:
    """`dynamodb:Attributes` of one table's part of a request (an item operation, a transaction's
    action, or a `BatchGetItem`'s `KeysAndAttributes` with its keys)."""
    names = request.get("ExpressionAttributeNames") or {}
    found: set[str] = set()
    for key in request.get("Keys") or [request.get("Key") or request.get("Item") or {}]:
        found.update(key)
    for field in _EXPRESSIONS:
        if request.get(field):
            found.update(expression_attributes(str(request[field]), names))
    found.update(request.get("AttributesToGet") or ())
    return found


def condition_keys(operation: str, payload: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The fine-grained condition keys of one item operation (`GetItem`, `UpdateItem`, ...), lower-cased
    as the evaluator keeps them; a `BatchGetItem`'s over all its tables."""
    if operation not in READS | WRITES:
        return {}
    parts = list(payload["RequestItems"].values()) if operation == "BatchGetItem" else [payload]
    attributes = sorted(set().union(*(request_attributes(part) for part in parts if isinstance(part, Mapping))))
    keys: dict[str, tuple[str, ...]] = {"dynamodb:attributes": tuple(attributes)} if attributes else {}
    if operation in READS:
        projects = any(part.get("ProjectionExpression") or part.get("AttributesToGet") for part in parts)
        everything = "ALL_PROJECTED_ATTRIBUTES" if payload.get("IndexName") else "ALL_ATTRIBUTES"
        select = payload.get("Select") or ("SPECIFIC_ATTRIBUTES" if projects else everything)
        keys["dynamodb:select"] = (str(select),)
    else:
        keys["dynamodb:returnvalues"] = (str(payload.get("ReturnValues") or "NONE"),)
    return keys
