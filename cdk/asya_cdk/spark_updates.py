"""`ApplicationGuards`: a Spark actor's EMR Serverless application is stopped before CloudFormation
updates it, so a changed `spark:` setting deploys while the application runs.

EMR Serverless refuses `UpdateApplication` unless the application is CREATED or STOPPED, and an
application stays STARTED for `spark.idle_minutes` after each job. Each application depends on a
custom resource of type `Custom::AsyaApplicationGuard` whose properties are the application's own
settings: a change to any of them updates the guard first, whose handler (`asya_spark.stopper`) stops
the application and waits for it to stop; CloudFormation then updates the application, and its next
job starts it again (auto start). One provider (a function and CDK's provider framework) serves every
application of the mesh.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_emrserverless as emrserverless
from aws_cdk import custom_resources
from constructs import Construct

from asya.names import SPARK_GUARD, resource_name
from asya_cdk.actor import nag_arn
from asya_cdk.function import MeshFunction, mesh_code
from asya_cdk.layer import SidecarLayer

GUARD_TYPE = "Custom::AsyaApplicationGuard"
STOP_TIMEOUT = cdk.Duration.minutes(14)  # the provider's onEvent may run 15 minutes; an application stops in one or two
# What the guard's properties copy from the application: a change to any of them is an update.
GUARDED = (
    "release_label",
    "architecture",
    "maximum_capacity",
    "auto_start_configuration",
    "auto_stop_configuration",
    "image_configuration",
    "monitoring_configuration",
)


class ApplicationGuards(Construct):
    """Exposes `function` (the handler's `MeshFunction`) and `provider`."""

    def __init__(self, scope: Construct, construct_id: str, *, namespace: str, layer: SidecarLayer) -> None:
        super().__init__(scope, construct_id)
        self.function = MeshFunction(
            self,
            "Stopper",
            name=resource_name(namespace, SPARK_GUARD),
            code=mesh_code(),
            handler="asya_spark.stopper.on_event",
            environment={},
            layer=layer,
            timeout=STOP_TIMEOUT,
            memory=256,
            tracing=False,
        )
        stack = cdk.Stack.of(self)
        applications = f"arn:{stack.partition}:emr-serverless:{stack.region}:{stack.account}:/applications/*"
        self.function.allow(["emr-serverless:ListApplications"], applications.removesuffix("/*"), applications)
        self.function.allow(["emr-serverless:GetApplication", "emr-serverless:StopApplication"], applications)
        self.provider = custom_resources.Provider(self, "Provider", on_event_handler=self.function.function)
        self._explain_findings()

    def guard(self, application: emrserverless.CfnApplication) -> cdk.CustomResource:
        """The application's guard: updated before it whenever one of its settings changes."""
        settings = {name: getattr(application, name) for name in GUARDED}
        scope = application.node.scope
        assert isinstance(scope, Construct)  # the application's own construct (`SparkActor`)
        guard = cdk.CustomResource(
            scope,
            f"{application.node.id}Guard",
            service_token=self.provider.service_token,
            resource_type=GUARD_TYPE,
            properties={
                "ApplicationName": application.name,
                "Settings": cdk.Stack.of(application).to_json_string(settings),
            },
        )
        application.node.add_dependency(guard)
        return guard

    def _explain_findings(self) -> None:
        reasons = {
            "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:emr-serverless:<AWS::Region>:"
            "<AWS::AccountId>:/applications/*]": "Application ids are made by EMR Serverless when the applications "
            "are created, after this function: it may read and stop this account's applications in this region, "
            "and stops only the one named asya-<ns>-<actor> whose settings changed.",
            "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]": "CDK's provider framework writes its own function's logs with AWS's "
            "basic execution policy.",
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{nag_arn(self, self.function.function)}:*]": "The provider "
            "framework may invoke the stopper function's versions, and nothing else.",
            "AwsSolutions::AwsSolutions-L1": "CDK's provider framework chooses its own function's runtime.",
        }
        for finding, reason in reasons.items():
            cdk.Validations.of(self).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))
