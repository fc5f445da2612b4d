"""`TaskTables`: where the status gateway keeps task records and their live event logs (docs/status.md).

Tasks: one item per envelope id, written by every hop with conditional updates. Its stream feeds the
gateway's stream consumer, which turns changes into `status` events; `by-status` lists tasks newest
first per status, and the sparse `by-deadline` index (only open tasks carry `open_shard`) lets the
backstop find overdue tasks without scanning; `by-id-prefix` finds tasks by the start of their id,
whatever its case (`asya.short_ids`). Events: an append-only log per task, `seq`-ordered.
Both expire through TTL on `expires_at`, which the writers stamp on finished tasks and on events.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya.names import (
    BY_DEADLINE,
    BY_ID_PREFIX,
    BY_STATUS,
    EVENTS_TABLE,
    JOINS_TABLE,
    SUMP_TABLE,
    TASKS_TABLE,
    resource_name,
)
from asya.short_ids import ID_HEAD, ID_LOWER
from asya.task_attributes import CREATED_BY_GATEWAY, HOP_READS, HOP_RETURN_VALUES, HOP_WRITES

TTL_ATTRIBUTE = "expires_at"


def string_key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


def mesh_table(
    scope: Construct,
    construct_id: str,
    partition_key: dynamodb.Attribute,
    *,
    table_name: str,
    sort_key: dynamodb.Attribute | None = None,
    stream: dynamodb.StreamViewType | None = None,
    ttl_attribute: str = TTL_ATTRIBUTE,
) -> dynamodb.Table:
    """Every table of the mesh: named (`asya-<ns>-<table>`, so the name its functions are told has a
    known length), on demand (an idle mesh costs nothing), encrypted, recoverable, and expiring items
    on `ttl_attribute`."""
    return dynamodb.Table(
        scope,
        construct_id,
        table_name=table_name,
        partition_key=partition_key,
        sort_key=sort_key,
        stream=stream,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        time_to_live_attribute=ttl_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )


class TaskTables(Construct):
    """Exposes `tasks`, `events` and `sump` (what x-sump kept, by envelope id and redrive count)."""

    def __init__(self, scope: Construct, construct_id: str, *, namespace: str) -> None:
        super().__init__(scope, construct_id)
        self.tasks = mesh_table(
            self,
            "Tasks",
            partition_key=string_key("id"),
            table_name=resource_name(namespace, TASKS_TABLE),
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        )
        self.tasks.add_global_secondary_index(
            index_name=BY_STATUS,
            partition_key=string_key("status"),
            sort_key=string_key("created_at"),
            # keys only: DynamoDB writes an index entry only when a projected attribute changes, so a
            # hop's update (progress, actor) costs no index write; listing reads the records by id
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        self.tasks.add_global_secondary_index(
            index_name=BY_DEADLINE,
            partition_key=string_key("open_shard"),
            sort_key=string_key("deadline_at"),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        self.tasks.add_global_secondary_index(  # short ids (`asya.short_ids`); the record writes its keys once
            index_name=BY_ID_PREFIX,
            partition_key=string_key(ID_HEAD),
            sort_key=string_key(ID_LOWER),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        self.events = mesh_table(
            self,
            "TaskEvents",
            partition_key=string_key("task_id"),
            table_name=resource_name(namespace, EVENTS_TABLE),
            sort_key=string_key("seq"),
        )
        self.sump = mesh_table(
            self,
            "Sump",
            partition_key=string_key("id"),
            table_name=resource_name(namespace, SUMP_TABLE),
            sort_key=dynamodb.Attribute(name="redrives", type=dynamodb.AttributeType.NUMBER),
        )

    def index_arn(self, index: str) -> str:
        return f"{self.tasks.table_arn}/index/{index}"

    def hop_reporting(self) -> list[iam.PolicyStatement]:
        """What an actor's hop needs (`asya.task_attributes`): move its task forward (conditional
        updates, which create the record of a task not started through the gateway) naming only the
        hop's attributes and returning none of the others, read the statuses of the pre-flight check
        by name, and append FLY events. Nothing can delete, scan or query, read the caller's input,
        owner or result, or write them.

        IAM's `dynamodb:Attributes` is every top-level attribute a request names, the key included
        (`asya_local.endpoint.dynamodb_conditions` computes it the same way); under
        `ForAllValues:StringEquals` each must be listed. A read must project (`dynamodb:Select` is
        `ALL_ATTRIBUTES` without a projection), and an update may return only what it wrote."""
        return [
            iam.PolicyStatement(
                actions=["dynamodb:UpdateItem"],
                resources=[self.tasks.table_arn],
                conditions={
                    "ForAllValues:StringEquals": {"dynamodb:Attributes": sorted(HOP_WRITES)},
                    "StringEqualsIfExists": {"dynamodb:ReturnValues": list(HOP_RETURN_VALUES)},
                },
            ),
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:BatchGetItem"],
                resources=[self.tasks.table_arn],
                conditions={
                    "ForAllValues:StringEquals": {"dynamodb:Attributes": sorted(HOP_READS)},
                    "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
                },
            ),
            self._appending(),
        ]

    def crew_reporting(self) -> list[iam.PolicyStatement]:
        """What the crew needs: x-sink and x-sump end tasks with their results and count branches on
        roots (writes that return the root, reads of whole records), x-pause and x-resume move a task
        in and out of `paused`. Its attribute list would be as long as the record's and change with
        every feature, so the crew may read and update any attribute but those the gateway wrote when
        it created the task (`CREATED_BY_GATEWAY`: the owner above all), which an explicit Deny keeps."""
        return [
            iam.PolicyStatement(
                actions=["dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:BatchGetItem"],
                resources=[self.tasks.table_arn],
            ),
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=["dynamodb:UpdateItem"],
                resources=[self.tasks.table_arn],
                conditions={"ForAnyValue:StringEquals": {"dynamodb:Attributes": sorted(CREATED_BY_GATEWAY)}},
            ),
            self._appending(),
        ]

    def _appending(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            actions=["dynamodb:PutItem", "dynamodb:BatchWriteItem"], resources=[self.events.table_arn]
        )


def joins_table(scope: Construct, namespace: str) -> dynamodb.Table:
    """What join actors gather (`asya.join_table`): a fan's branches under its id, by slot."""
    return mesh_table(
        scope,
        "Joins",
        string_key("fan"),
        table_name=resource_name(namespace, JOINS_TABLE),
        sort_key=dynamodb.Attribute(name="slot", type=dynamodb.AttributeType.NUMBER),
    )


def gathering(table: dynamodb.ITable) -> iam.PolicyStatement:
    """What a join actor needs of the joins table: keep a branch and count it (conditional writes that
    return the item, so no read), and read a whole fan back once. No scan, no delete."""
    return iam.PolicyStatement(
        actions=["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"], resources=[table.table_arn]
    )
