"""The tasks, events, sump and joins tables as the CDK app defines them (`asya_cdk.tasks`), the hop ledger's
idempotency table (`asya_cdk.mesh`) and the Spark batches table (`asya_cdk.spark`), made directly in
moto's in-process AWS for unit tests and benchmarks. The local stack deploys the real ones; the
integration tests and the CDK template tests keep the definitions in step."""

from __future__ import annotations

from typing import Any

from asya.names import BY_DEADLINE, BY_ID_PREFIX, BY_STATUS
from asya.short_ids import ID_HEAD, ID_LOWER

TASKS = "asya-tasks"
EVENTS = "asya-task-events"
SUMP = "asya-sump"
JOINS = "asya-joins"


def create_idempotency_table(dynamodb: Any, name: str, *, key: str = "id") -> None:
    """The hop records Powertools' persistence layer writes (`asya.dedup`), keyed by their hashed id
    (or another table keyed by one string, `key`)."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def create_state_table(dynamodb: Any, name: str) -> None:
    """The actors' state (`asya.state_store`), one item per `<actor>#<key>`."""
    create_idempotency_table(dynamodb, name, key="key")


def create_tables(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=TASKS,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"}
            for name in ("id", "status", "created_at", "open_shard", "deadline_at", ID_HEAD, ID_LOWER)
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": BY_STATUS,
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "created_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            {
                "IndexName": BY_DEADLINE,
                "KeySchema": [
                    {"AttributeName": "open_shard", "KeyType": "HASH"},
                    {"AttributeName": "deadline_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            {
                "IndexName": BY_ID_PREFIX,
                "KeySchema": [
                    {"AttributeName": ID_HEAD, "KeyType": "HASH"},
                    {"AttributeName": ID_LOWER, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    _keyed_table(dynamodb, EVENTS, ("task_id", "S"), ("seq", "S"))
    _keyed_table(dynamodb, SUMP, ("id", "S"), ("redrives", "N"))  # what x-sump kept (`asya.sump`)
    _keyed_table(dynamodb, JOINS, ("fan", "S"), ("slot", "N"))  # what joins gather (`asya.join_table`)


def _keyed_table(dynamodb: Any, name: str, partition: tuple[str, str], sort: tuple[str, str]) -> None:
    """A table with a partition and a sort key, each `(name, DynamoDB type)`, and nothing more."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": partition[0], "KeyType": "HASH"}, {"AttributeName": sort[0], "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": kind} for key, kind in (partition, sort)],
        BillingMode="PAY_PER_REQUEST",
    )


SPARK_BATCHES = "asya-spark-batches"


def create_spark_batches_table(dynamodb: Any) -> None:
    """The Spark batches table as `asya_cdk.spark.batches_table` defines it."""
    from asya_spark.ledger import OPEN_INDEX

    dynamodb.create_table(
        TableName=SPARK_BATCHES,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "open_actor", "AttributeType": "S"},
            {"AttributeName": "staged_at", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": OPEN_INDEX,
                "KeySchema": [
                    {"AttributeName": "open_actor", "KeyType": "HASH"},
                    {"AttributeName": "staged_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
