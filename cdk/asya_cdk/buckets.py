"""The mesh's buckets (results, actor state): one set of safeguards for every bucket the mesh makes, so a
new one cannot be made without encryption, TLS, private access or its retention on stack deletion."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct


def kept_bucket(scope: Construct, construct_id: str, lifecycle: list[s3.LifecycleRule]) -> s3.Bucket:
    """Encrypted, TLS-only, private, owned by the account, and kept when the stack goes: what it holds
    (a task's results, an actor's state) outlives a redeploy that replaces the stack."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=lifecycle,
        removal_policy=cdk.RemovalPolicy.RETAIN,
    )
