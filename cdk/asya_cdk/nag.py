"""cdk-nag findings the mesh makes on purpose, acknowledged where they arise, each with its reason."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct


def acknowledge(scope: Construct, finding: str, reason: str) -> None:
    """Acknowledge an AwsSolutions finding (`APIG2`, `IAM4[...]`) on `scope` and what it holds."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::AwsSolutions-{finding}", reason=reason))
