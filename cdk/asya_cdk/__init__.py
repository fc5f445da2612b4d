"""The mesh's CDK app: constructs, the mesh file's model, and the limits checked before synthesis."""

import os

# Set before anything imports `aws_cdk`, whose jsii kernel prints a banner on Node releases past
# jsii's support date at start-up (Node 20 on the machines this runs on); a user may still override it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asya_cdk.construct import AsyaMesh, AsyaMeshError, MeshActor

__all__ = ["AsyaMesh", "AsyaMeshError", "MeshActor"]


def __getattr__(name: str) -> Any:
    """`from asya_cdk import AsyaMesh` loads aws_cdk only then (PEP 562): the command-line tool imports
    `asya_cdk.config` and `asya_cdk.loading`, which must stay light, through this package."""
    if name in __all__:
        from asya_cdk import construct

        return getattr(construct, name)
    raise AttributeError(f"module 'asya_cdk' has no attribute {name!r}")
