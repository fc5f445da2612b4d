"""`MeshFunction`: a function of the mesh itself, invoked by something other than an actor queue."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from asya_cdk.actor import ACTOR_CODE_EXCLUDE, explain_tracing, log_group
from asya_cdk.layer import RUNTIME, SidecarLayer

MESH_CODE = Path(__file__).resolve().parents[2] / "lambdas"  # the crew's and the Spark actors' functions
LOG_RETENTION_DAYS = 30


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
        code_dir: Path,
        handler: str,
        environment: dict[str, str],
        layer: SidecarLayer,
        timeout: float,
        memory: int,
        tracing: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = log_group(self, "Logs", f"/aws/lambda/{name}", LOG_RETENTION_DAYS)
        self.role = iam.Role(
            self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=f"asya {name}"
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=name,
            runtime=RUNTIME,
            architecture=layer.architecture,
            handler=handler,
            code=lambda_.Code.from_asset(str(code_dir), exclude=list(ACTOR_CODE_EXCLUDE)),
            layers=[layer.layer],
            environment=environment,
            memory_size=memory,
            timeout=cdk.Duration.seconds(timeout),
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            tracing=lambda_.Tracing.ACTIVE if tracing else lambda_.Tracing.DISABLED,
        )

        if tracing:
            explain_tracing(self.role)

    def allow(self, actions: list[str], *resources: str) -> None:
        self.role.add_to_policy(iam.PolicyStatement(actions=actions, resources=list(resources)))
