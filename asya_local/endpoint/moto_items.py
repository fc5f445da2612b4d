"""Write moto's DynamoDB item answers directly: `apply_item_answers()` patches moto 5.2.5 in place.

moto answers every DynamoDB operation through its generic, model-driven serializer, which walks the
answer against the operation's output shape, member by member, down to every attribute value of
every item. For the operations that answer with items (a hop's claim, `UpdateItem`, and the crew's
pre-flight `BatchGetItem` among them) the answer is DynamoDB's wire form already: the serializer
only drops the members that are None, base64-encodes binary values and writes JSON. That is what
`dynamo_json_dump` (moto's own DynamoDB JSON encoder, the one `GetRecords` answers go through in
`moto_streams`) does, after the None members are dropped here: the same answer for a fraction of
the CPU (a `BatchGetItem` of ten keys about half of its cost, a claim about a twentieth).
`DeleteItem` is left to the serializer: its answer carries a member the output shape does not have.
"""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult
from moto.dynamodb.models.utilities import dynamo_json_dump
from moto.dynamodb.responses import DynamoHandler, DynamoResult

CONTENT_TYPE = "application/x-amz-json-1.0"
ITEM_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "Query", "Scan", "TransactGetItems"})
_SERIALIZED = DynamoHandler.serialized


def _without_nones(value: Any) -> Any:
    """The answer as the serializer writes it: a member that is None is left out, at any depth."""
    if isinstance(value, dict):
        return {key: _without_nones(member) for key, member in value.items() if member is not None}
    if isinstance(value, list):
        return [_without_nones(member) for member in value]
    return value


def _serialized(handler: DynamoHandler, action_result: ActionResult) -> Any:
    result = action_result.result
    if type(action_result) is DynamoResult and isinstance(result, dict) and handler._get_action() in ITEM_OPERATIONS:
        headers: dict[str, Any] = {"Content-Type": CONTENT_TYPE, **handler.response_headers}
        return 200, headers, dynamo_json_dump(_without_nones(result))
    return _SERIALIZED(handler, action_result)


def apply_item_answers() -> None:
    """Patch moto's DynamoDB handler in this process (idempotent)."""
    if getattr(DynamoHandler, "_asya_item_answers", False):
        return
    setattr(DynamoHandler, "serialized", _serialized)  # noqa: B010 - mypy: no method-assign
    setattr(DynamoHandler, "_asya_item_answers", True)  # noqa: B010
