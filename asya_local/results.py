"""Reading what the crew kept, wherever it kept it, for `asya results`, `asya demo` and the benches.

x-sink keeps a small final result in its task record (`output`, the payload as JSON) and everything
else as an S3 object under `results/<ns>/<id>/` (`asya.results`). Readers see both as one list of
kept documents: the S3 object's envelope as written, or for a result in a task record the envelope
rebuilt from that record (id, parent, route, final status and payload; the headers an envelope
carried are not kept there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from asya.dynamo import from_item
from asya.results import PREFIX, result_key, result_prefix

UNPARSED = "unparsed"  # the field a kept body past the parser's depth is read into, as text
RECORD_KEY = "task record "  # where a result kept in a task record is said to be kept: before its id
TASK_ENDED = "task_ended"  # a fan-out root's document: how its task ended, when not as its own envelope
_HOLDS_RESULT = {"FilterExpression": "attribute_exists(#o)", "ExpressionAttributeNames": {"#o": "output"}}


@dataclass(frozen=True)
class KeptResults:
    """A namespace's results: its bucket, and its tasks table when it tracks tasks (scanned: local
    stacks only)."""

    s3: Any
    bucket: str
    namespace: str
    dynamodb: Any
    tasks_table: str | None

    def all(self) -> list[dict[str, Any]]:
        """Everything kept, each as `{id, key, outcome, envelope, text}`: S3 objects, then task records."""
        return [*read_objects(self.s3, self.bucket, f"{PREFIX}/{self.namespace}/"), *self._records()]

    def count(self) -> int:
        """How many results are kept, without reading them."""
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{PREFIX}/{self.namespace}/"
        )
        count: int = sum(page.get("KeyCount", 0) for page in pages)
        if self.tasks_table:
            scan = self.dynamodb.get_paginator("scan").paginate(
                TableName=self.tasks_table, Select="COUNT", **_HOLDS_RESULT
            )
            count += sum(page.get("Count", 0) for page in scan)
        return count

    def of(self, envelope_id: str) -> list[dict[str, Any]]:
        """What is kept for one envelope (its hooks' and x-sump's copies included)."""
        kept = read_objects(self.s3, self.bucket, result_prefix(self.namespace, envelope_id))
        if self.tasks_table:
            key = {"id": {"S": envelope_id}}
            item = self.dynamodb.get_item(TableName=self.tasks_table, Key=key, ConsistentRead=True).get("Item", {})
            if "output" in item:
                kept.append(record_result(from_item(item)))
        return kept

    def succeeded(self, envelope_id: str) -> bool:
        """Whether an envelope's successful result is kept yet: in its task record, or in S3."""
        if self.tasks_table:
            key = {"id": {"S": envelope_id}}
            item = self.dynamodb.get_item(TableName=self.tasks_table, Key=key, ConsistentRead=True)
            if "output" in item.get("Item", {}):
                return True
        try:
            self.s3.head_object(Bucket=self.bucket, Key=result_key(self.namespace, envelope_id, "succeeded"))
        except self.s3.exceptions.ClientError:
            return False
        return True

    def _records(self) -> list[dict[str, Any]]:
        if not self.tasks_table:
            return []
        pages = self.dynamodb.get_paginator("scan").paginate(TableName=self.tasks_table, **_HOLDS_RESULT)
        return [record_result(from_item(item)) for page in pages for item in page.get("Items", [])]


def read_objects(s3: Any, bucket: str, prefix: str) -> list[dict[str, Any]]:
    """The objects under `prefix`, each as `{id, key, outcome, envelope, text}` (`id`: the one the key names)."""
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            text = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().decode(errors="replace")
            try:
                body = orjson.loads(text)
            except orjson.JSONDecodeError:  # past the parser's depth: x-sump kept the body as it came
                body = {UNPARSED: text}
            envelope_id = item["Key"].split("/")[2]  # results/<ns>/<id>/[hooks/]<outcome>.json
            outcome = item["Key"].rsplit("/", 1)[-1].removesuffix(".json")
            found.append({"id": envelope_id, "key": item["Key"], "outcome": outcome, "envelope": body, "text": text})
    return found


def record_result(record: dict[str, Any]) -> dict[str, Any]:
    """One task record's result as a kept document. A fan-out root's record holds its own envelope's
    ending (`own_outcome`) beside how the task ended, which its branches decide: the document is the
    envelope's, as every other kept document is, with the task's ending apart (`TASK_ENDED`)."""
    status = {name: record[name] for name in ("phase", "actor", "reason", "error") if record.get(name) is not None}
    envelope = {
        "id": record["id"],
        "parent_id": record.get("parent_id"),
        "route": record.get("route") or {"prev": [], "curr": "", "next": []},
        "status": status,
        "payload": orjson.loads(record["output"]),
    }
    key = f"{RECORD_KEY}{record['id']}"
    kept = {"id": record["id"], "key": key, "outcome": record["status"], "envelope": envelope, "text": record["output"]}
    own = record.get("own_outcome")
    if own and own != record["status"]:  # a fan-out root its branches ended otherwise than its own envelope
        status["phase"] = kept["outcome"] = own
        kept[TASK_ENDED] = record["status"]
    return kept
