"""The tasks and events tables as the CDK app defines them (`asya_cdk.gateway`), the hop ledger's
idempotency table (`asya_cdk.mesh`) and the Spark batches table (`asya_cdk.spark`), made directly in
moto's in-process AWS for unit tests and benchmarks. The local stack deploys the real ones; the
integration tests and the CDK template tests keep the definitions in step."""

from __future__ import annotations

from typing import Any

from asya.names import BY_DEADLINE, BY_STATUS

TASKS = "asya-tasks"
EVENTS = "asya-task-events"


def create_idempotency_table(dynamodb: Any, name: str) -> None:
    """The hop records Powertools' persistence layer writes (`asya.dedup`), keyed by their hashed id."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def create_tables(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=TASKS,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"}
            for name in ("id", "status", "created_at", "open_shard", "deadline_at")
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
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    dynamodb.create_table(
        TableName=EVENTS,
        KeySchema=[{"AttributeName": "task_id", "KeyType": "HASH"}, {"AttributeName": "seq", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "task_id", "AttributeType": "S"},
            {"AttributeName": "seq", "AttributeType": "S"},
        ],
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
