"""The actor state table and bucket (`asya.state_store`), and each stateful actor's grant on its own
keys and objects only.

One table for the mesh, made when some actor has `state:`: partition key `key`, `<actor>#<key>`. An
actor's role may read and put items whose partition key starts with `<actor>#` (IAM's
`dynamodb:LeadingKeys`), nothing else: no scan, no query, no delete (a delete is a tombstone put), and
no other actor's keys. Values too large for an item go to the mesh's state bucket, under `<actor>/`
(`asya.state_objects`), where the actor may get, put and delete objects and nothing else. A bucket of
its own, not the results bucket, whose objects all expire with the mesh's results; here only the
objects of an actor whose keys expire (`ttl_days`) do, a day after its keys would. The crew and the
gateway get nothing on either.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from asya.names import STATE_TABLE, resource_name
from asya_cdk.actor import nag_arn
from asya_cdk.buckets import kept_bucket
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


def state_bucket(scope: Construct, expiring: dict[str, int]) -> s3.Bucket:
    """Encrypted, TLS-only, private, kept when the stack goes (as the results are); `expiring`: the
    actors whose keys expire, and after how many days."""
    lifecycle = [s3.LifecycleRule(abort_incomplete_multipart_upload_after=cdk.Duration.days(1))]
    lifecycle += [
        s3.LifecycleRule(prefix=f"{actor}/", expiration=cdk.Duration.days(days + 1))
        for actor, days in sorted(expiring.items())
    ]
    bucket = kept_bucket(scope, "StateValues", lifecycle)
    cdk.Validations.of(bucket).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-S1",
            reason="Only the stateful actors' roles reach it, each its own prefix; CloudTrail data events audit "
            "access when a deployment needs it.",
        )
    )
    return bucket


def own_objects(role: iam.IRole, bucket: s3.IBucket, actor: str) -> None:
    """`actor`'s large values: objects under `<actor>/` only, no listing."""
    prefix = f"{actor}/*"
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], resources=[bucket.arn_for_objects(prefix)]
        )
    )
    cdk.Validations.of(role).acknowledge(
        cdk.Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{nag_arn(role, bucket)}/{prefix}]",
            reason="A state value too large for its item is one object per write under the actor's own prefix, "
            "so the role may get, put and delete objects there only.",
        )
    )
