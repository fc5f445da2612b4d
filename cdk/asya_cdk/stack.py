"""`MeshStack`: the stack `cdk deploy` creates for one mesh file."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from asya import __version__
from asya.names import CONTAINER_SERVICES_OUTPUT, VERSION_OUTPUT, VERSION_TAG, mesh_prefix
from asya_cdk.construct import AsyaMesh
from asya_cdk.container import container_services
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.plan import STACK_BUDGET
from asya_cdk.user_pool import SignInPool


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
        services = container_services(mesh)
        if services:
            cdk.CfnOutput(
                self,
                CONTAINER_SERVICES_OUTPUT,
                value=json.dumps(services, separators=(",", ":")),
                description="each container actor's ECS service: its cluster, name and most tasks",
            )
        if self.mesh.spark_batches is not None:
            cdk.CfnOutput(self, "SparkBatchesTable", value=self.mesh.spark_batches.table_name)
        if gateway.sign_in is not None:
            _sign_in_outputs(self, gateway.sign_in)
        if gateway.api_key is not None:
            cdk.CfnOutput(
                self,
                "ApiKeyId",
                value=gateway.api_key.key_id,
                description="aws apigateway get-api-key --include-value --api-key <id> prints the key",
            )


def stack_name(mesh: LoadedMesh) -> str:
    return mesh_prefix(mesh.config.namespace)


def _sign_in_outputs(stack: cdk.Stack, made: SignInPool) -> None:
    """What a caller needs to get a token of the pool (docs/callers.md): `asya token --stack` reads them."""
    cdk.CfnOutput(stack, "UserPoolId", value=made.pool.user_pool_id)
    cdk.CfnOutput(stack, "UserPoolClientId", value=made.client.user_pool_client_id)
    cdk.CfnOutput(
        stack,
        "MachineClientId",
        value=made.machine_client.user_pool_client_id,
        description="the client credentials client: aws cognito-idp describe-user-pool-client prints its secret",
    )
    cdk.CfnOutput(stack, "Issuer", value=made.names.issuer, description="the tokens' iss: the pool's OpenID issuer")
    cdk.CfnOutput(stack, "TokenUrl", value=made.token_url, description="the pool's OAuth token endpoint")
    cdk.CfnOutput(
        stack, "AuthorizeUrl", value=made.authorize_url, description="the pool's hosted sign-in (code flow, PKCE)"
    )
