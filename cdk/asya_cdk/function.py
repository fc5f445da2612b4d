"""`MeshFunction`: a function of the mesh itself, invoked by something other than an actor queue."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from asya_cdk.actor import log_group, mesh_lambda
from asya_cdk.actor_config import SYSTEM_LOG_LEVEL
from asya_cdk.layer import SidecarLayer
from asya_cdk.packaging import code_folder
from asya_cdk.sources import shipped

LOG_RETENTION_DAYS = 30


def mesh_code() -> lambda_.Code:
    """The code of the mesh's own functions (the crew's, a Spark actor's dispatcher and collector):
    `asya_crew` and `asya_spark`, and nothing else of the installation."""
    return code_folder(shipped("asya_crew", "asya_spark"))


class MeshFunction(Construct):
    """A function of the mesh's own that no queue feeds (the gateway's, a Spark actor's collector), with
    its own role (no managed policies) and log group, on the sidecar layer. Exposes `function`, `role`
    and `log_group`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        code: lambda_.Code,
        handler: str,
        environment: dict[str, str],
        layer: SidecarLayer,
        timeout: cdk.Duration,
        memory: int,
        tracing: bool,
        system_log_level: str = SYSTEM_LOG_LEVEL,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = log_group(self, "Logs", f"/aws/lambda/{name}", LOG_RETENTION_DAYS)
        self.role = iam.Role(
            self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=f"asya {name}"
        )
        self.log_group.grant_write(self.role)
        self.function = mesh_lambda(
            self,
            name=name,
            role=self.role,
            log_group=self.log_group,
            handler=handler,
            code=code,
            environment=environment,
            layer=layer,
            memory=memory,
            timeout=timeout,
            tracing=tracing,
            system_log_level=system_log_level,
            reserved_concurrency=reserved_concurrency,
        )

    def allow(self, actions: list[str], *resources: str) -> None:
        self.role.add_to_policy(iam.PolicyStatement(actions=actions, resources=list(resources)))
