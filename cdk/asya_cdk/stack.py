"""`MeshStack`: the stack `cdk deploy` creates for one mesh file."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from asya_cdk.config import LoadedMesh
from asya_cdk.mesh import Mesh


class MeshStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, mesh: LoadedMesh, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, description=f"asya mesh '{mesh.config.namespace}'", **kwargs)
        self.mesh = Mesh(self, "Mesh", mesh)
        cdk.CfnOutput(self, "ResultsBucket", value=self.mesh.bucket.bucket_name)
        cdk.CfnOutput(self, "Dashboard", value=self.mesh.dashboard.dashboard.dashboard_name)


def stack_name(mesh: LoadedMesh) -> str:
    return f"asya-{mesh.config.namespace}"
