"""The tasks and events tables as the CDK app defines them (`asya_cdk.gateway`), made in moto for unit
tests; the integration tests use the deployed ones."""

from __future__ import annotations

from typing import Any

TASKS = "unit-tasks"
EVENTS = "unit-events"


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
                "IndexName": "by-status",
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "created_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": "by-deadline",
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
