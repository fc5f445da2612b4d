"""Who may read and write the claim-checked payloads of a namespace (`asya.claims`): senders (actors,
Spark jobs, the gateway) write and read them, the crew's keepers only read them, and nobody may list
or delete them (they expire with the bucket's results)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from asya.claims import claim_prefix
from asya_cdk.actor import nag_arn


def grant_claims(role: iam.IRole, bucket: s3.IBucket, namespace: str, *, read: bool = True, write: bool) -> None:
    actions = (["s3:GetObject"] if read else []) + (["s3:PutObject"] if write else [])
    prefix = f"{claim_prefix(namespace)}*"
    role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[bucket.arn_for_objects(prefix)]))
    cdk.Validations.of(role).acknowledge(
        cdk.Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{nag_arn(role, bucket)}/{prefix}]",
            reason="A payload over the claim-check threshold travels as one object per envelope and content "
            "under its namespace's claims prefix, so the role may get (and a sender put) objects there only.",
        )
    )
