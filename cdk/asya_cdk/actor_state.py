"""The actor state table (`asya.state_store`) and each stateful actor's grant on its own keys only.

One table for the mesh, made when some actor has `state:`: partition key `key`, `<actor>#<key>`. An
actor's role may read and put items whose partition key starts with `<actor>#` (IAM's
`dynamodb:LeadingKeys`), nothing else: no scan, no query, no delete (a delete is a tombstone put), and
no other actor's keys. The crew and the gateway get nothing on it.
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya.names import STATE_TABLE, resource_name
from asya_cdk.tasks import mesh_table, string_key


def state_table(scope: Construct, namespace: str) -> dynamodb.Table:
    """On demand, encrypted, recoverable, and expiring keys (`ttl_days`) and tombstones on `expires_at`."""
    return mesh_table(scope, "ActorState", string_key("key"), table_name=resource_name(namespace, STATE_TABLE))


def own_keys(table: dynamodb.ITable, actor: str) -> iam.PolicyStatement:
    """`actor`'s keys: every partition key the request touches starts with `<actor>#` (actor names hold
    no '#', so no actor's prefix is the start of another's)."""
    return iam.PolicyStatement(
        actions=["dynamodb:GetItem", "dynamodb:PutItem"],
        resources=[table.table_arn],
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{actor}#*"]}},
    )
