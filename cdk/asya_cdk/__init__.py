"""The mesh's CDK app: constructs, the mesh file's model, and the limits checked before synthesis.

Public (docs/public-api.md): `AsyaMesh`, `MeshActor`, `AsyaMeshError`, `MeshStack` and `asya_cdk.app`;
the other modules are the app's own parts.
"""

import os

# Set before anything imports `aws_cdk`, whose jsii kernel prints a banner on Node releases past
# jsii's support date at start-up (Node 20 on the machines this runs on); a user may still override it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asya_cdk.construct import AsyaMesh, AsyaMeshError, MeshActor
    from asya_cdk.stack import MeshStack

__all__ = ["AsyaMesh", "AsyaMeshError", "MeshActor", "MeshStack"]

_HOMES = {
    "AsyaMesh": "asya_cdk.construct",
    "AsyaMeshError": "asya_cdk.construct",
    "MeshActor": "asya_cdk.construct",
    "MeshStack": "asya_cdk.stack",
}


def __getattr__(name: str) -> Any:
    """`from asya_cdk import AsyaMesh` loads aws_cdk only then (PEP 562): the command-line tool imports
    `asya_cdk.config` and `asya_cdk.loading`, which must stay light, through this package."""
    home = _HOMES.get(name)
    if home is not None:
        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module 'asya_cdk' has no attribute {name!r}")
