"""`MeshStack`: the stack `cdk deploy` creates for one mesh file."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from asya import __version__
from asya.names import VERSION_OUTPUT, VERSION_TAG, mesh_prefix
from asya_cdk.construct import AsyaMesh
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.plan import STACK_BUDGET


class MeshStack(cdk.Stack):
    """The stack records the release that built it (`asya.__version__`) twice: the `asya:version` tag,
    on the stack itself as on each of its resources, and the `AsyaVersion` output, which
    `aws cloudformation describe-stacks` shows beside the mesh's others.

    `stack_budget` is the most resources the mesh puts in one stack before it moves its actors into
    nested stacks (`asya_cdk.plan`); lower it only to exercise the split with a small mesh."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        mesh: LoadedMesh,
        stack_budget: int = STACK_BUDGET,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, description=f"asya mesh '{mesh.config.namespace}'", **kwargs)
        self.mesh = AsyaMesh(self, "Mesh", config=mesh, stack_budget=stack_budget)  # the same construct teams add
        cdk.Tags.of(self).add(VERSION_TAG, __version__)
        cdk.CfnOutput(self, VERSION_OUTPUT, value=__version__, description="the asya-aws release that built the stack")
        cdk.CfnOutput(self, "ResultsBucket", value=self.mesh.bucket.bucket_name)
        cdk.CfnOutput(self, "Dashboard", value=self.mesh.dashboard.dashboard.dashboard_name)
        gateway = self.mesh.gateway
        cdk.CfnOutput(
            self,
            "ApiUrl",
            value=gateway.url,
            description="the status gateway: REST under api/v1/, MCP at mcp, health at health",
        )
        cdk.CfnOutput(
            self,
            "GatewayAuth",
            value=mesh.config.gateway.auth,
            description="how a caller proves who it is: iam (SigV4), api_key, or jwt (a bearer token)",
        )
        cdk.CfnOutput(self, "TasksTable", value=self.mesh.task_tables.tasks.table_name)
        cdk.CfnOutput(self, "EventsTable", value=self.mesh.task_tables.events.table_name)
        if self.mesh.spark_batches is not None:
            cdk.CfnOutput(self, "SparkBatchesTable", value=self.mesh.spark_batches.table_name)
        if gateway.user_pool is not None and gateway.user_pool_client is not None:
            cdk.CfnOutput(self, "UserPoolId", value=gateway.user_pool.user_pool_id)
            cdk.CfnOutput(self, "UserPoolClientId", value=gateway.user_pool_client.user_pool_client_id)
            issuer = gateway.names.user_pool.issuer if gateway.names.user_pool is not None else ""
            cdk.CfnOutput(self, "Issuer", value=issuer, description="the tokens' iss: the pool's OpenID issuer")
        if gateway.api_key is not None:
            cdk.CfnOutput(
                self,
                "ApiKeyId",
                value=gateway.api_key.key_id,
                description="aws apigateway get-api-key --include-value --api-key <id> prints the key",
            )


def stack_name(mesh: LoadedMesh) -> str:
    return mesh_prefix(mesh.config.namespace)
