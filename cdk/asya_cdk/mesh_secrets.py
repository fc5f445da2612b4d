"""The secrets a mesh makes for itself: random values its functions derive keys from, which no one
types in. The gateway's cursor secret is one (`asya_cdk.gateway`), the envelope seal's another."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from asya_cdk.nag import acknowledge


def generated_secret(scope: Construct, construct_id: str, *, description: str, rotation: str) -> secretsmanager.Secret:
    """A random secret made with the mesh. It has no name of its own, so that a mesh deleted and made
    again does not wait for the old secret's recovery window. `rotation`: why it needs no rotation
    function, and what putting a new value does (cdk-nag's SMG4, acknowledged with it)."""
    secret = secretsmanager.Secret(
        scope,
        construct_id,
        description=description,
        generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    acknowledge(secret, "SMG4", rotation)
    return secret


def seal_secret(scope: Construct, namespace: str) -> secretsmanager.Secret:
    """What the mesh seals its envelopes with (`asya.seal`): read by every function that sends or
    receives them, and by nothing else."""
    return generated_secret(
        scope,
        "SealSecret",
        description=f"asya {namespace}: the mesh seals the envelopes its functions send with a key derived from it",
        rotation="The secret only keys the envelopes' seals: a new value is read by each function's next "
        "execution environment, and an envelope sealed under the old one and received after it is taken for "
        "a producer's (a new task, or x-sump as NotAdmitted), so it is rotated between bursts of work by "
        "putting a new random value, without a rotation function.",
    )
