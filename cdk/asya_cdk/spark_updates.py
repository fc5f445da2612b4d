"""`ApplicationGuards`: a Spark actor's EMR Serverless application is stopped before CloudFormation
updates or deletes it, so a changed `spark:` setting deploys, and the stack deletes, while it runs.

EMR Serverless refuses `UpdateApplication` and `DeleteApplication` unless the application is CREATED
or STOPPED, and an application stays STARTED for `spark.idle_minutes` after each job. CloudFormation
orders a stack's operations by its resources' dependencies: on create and update a resource comes
after what it depends on, on delete before it. One resource cannot come before the application on an
update and also before it on a delete, so each application has two (handled by `asya_spark.stopper`):

- the guard, `Custom::AsyaApplicationGuard`, which the application depends on: a change to any of the
  application's settings (its properties) updates it first; it holds the actor's job starts, drains
  the running jobs and stops the application;
- the after resource, `Custom::AsyaApplicationAfter`, which depends on the application (it names its
  id): updated after it (the same settings), it lifts the hold; deleted before it (on `cdk destroy`,
  or when the actor leaves the mesh or its stack), it cancels the application's runs and stops it.

The application's next job starts it again (auto start). One provider (a function and CDK's provider
framework) serves every application of the mesh.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_emrserverless as emrserverless
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources
from constructs import Construct

from asya.names import SPARK_GUARD, resource_name
from asya_cdk.actor import nag_arn
from asya_cdk.function import MeshFunction, mesh_code
from asya_cdk.layer import SidecarLayer
from asya_spark.ledger import HOLD, key_prefix
from asya_spark.stopper import AFTER_TYPE, GUARD_TYPE

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

    def __init__(
        self, scope: Construct, construct_id: str, *, namespace: str, layer: SidecarLayer, table: dynamodb.ITable
    ) -> None:
        super().__init__(scope, construct_id)
        self.namespace, self.table = namespace, table
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
        # `applications` (`/applications/*`) covers their job runs too (`/applications/<id>/jobruns/<run>`)
        runs = ["emr-serverless:ListJobRuns", "emr-serverless:CancelJobRun"]
        self.function.allow(["emr-serverless:GetApplication", "emr-serverless:StopApplication", *runs], applications)
        self.function.role.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:PutItem", "dynamodb:DeleteItem"],
                resources=[table.table_arn],
                # the Spark actors' start holds (`asya_spark.ledger`), no batch or claim
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [key_prefix(namespace, "*") + HOLD]}},
            )
        )
        self.provider = custom_resources.Provider(self, "Provider", on_event_handler=self.function.function)
        self._explain_findings()

    def guard(
        self, application: emrserverless.CfnApplication, actor: str
    ) -> tuple[cdk.CustomResource, cdk.CustomResource]:
        """The application's guard, updated before it whenever one of its settings changes, and its after
        resource, updated after it and deleted before it."""
        settings = cdk.Stack.of(application).to_json_string({name: getattr(application, name) for name in GUARDED})
        scope = application.node.scope
        assert isinstance(scope, Construct)  # the application's own construct (`SparkActor`)
        hold = {"BatchesTable": self.table.table_name, "Namespace": self.namespace, "Actor": actor}
        guard = cdk.CustomResource(
            scope,
            f"{application.node.id}Guard",
            service_token=self.provider.service_token,
            resource_type=GUARD_TYPE,
            properties={"ApplicationName": application.name, "Settings": settings, **hold},
        )
        application.node.add_dependency(guard)
        # naming the application's id makes it depend on the application: deleted before it
        after = cdk.CustomResource(
            scope,
            f"{application.node.id}After",
            service_token=self.provider.service_token,
            resource_type=AFTER_TYPE,
            properties={"ApplicationId": application.attr_application_id, "Settings": settings, **hold},
        )
        return guard, after

    def _explain_findings(self) -> None:
        reasons = {
            "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:emr-serverless:<AWS::Region>:"
            "<AWS::AccountId>:/applications/*]": "Application ids are made by EMR Serverless when the applications "
            "are created, after this function: it may read and stop this account's applications in this region and "
            "cancel their job runs, and acts only on the application asya-<ns>-<actor> being updated or deleted.",
            "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]": "CDK's provider framework writes its own function's logs with AWS's "
            "basic execution policy.",
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{nag_arn(self, self.function.function)}:*]": "The provider "
            "framework may invoke the stopper function's versions, and nothing else.",
            "AwsSolutions::AwsSolutions-L1": "CDK's provider framework chooses its own function's runtime.",
        }
        for finding, reason in reasons.items():
            cdk.Validations.of(self).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))
