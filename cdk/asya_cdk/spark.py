"""Spark actors: what `runtime: spark` adds beside the actor's queue and dispatcher function.

- The EMR Serverless application `asya-<ns>-<actor>` (the mesh's Spark release, auto start on the
  first job, auto stop when idle, a capacity ceiling), logging to its own log group, on the actor's
  `spark.image_uri` or else on the image the mesh builds (`job_image.JobImages`).
- The job role, assumed by EMR Serverless for this application only: it reads the job's code and the
  actor's staged input, writes the batch's output, writes its logs, and nothing else.
- The job's code as assets: `asya_spark_job/entry.py` (the entry point), the actor's folder (`--py-files`),
  and the `asya` core with its dependencies built for the application's platform (`--archives`).
- The collector `asya-<ns>-x-collect-<actor>`, invoked by the application's job-state events and by
  the reconciliation schedule.
- Grants for the dispatcher (the actor's function): stage under `spark/<ns>/<actor>/`, record batches
  and hop claims under its own keys, start job runs on its application, pass the job role to it.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_emrserverless as emrserverless
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from asya.names import collector_name, resource_name
from asya_cdk.actor import ActorFunction, grant_trace_segments, log_group, nag_arn
from asya_cdk.environment import MeshNames, SparkNames, spark_environment
from asya_cdk.function import MeshFunction, mesh_code
from asya_cdk.grants import grant_permissions
from asya_cdk.job_image import JobImages
from asya_cdk.layer import LibraryBundling, SidecarLayer, layer_requirements
from asya_cdk.libraries import Build, Requirements, Target
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.packaging import ACTOR_CODE_EXCLUDE
from asya_cdk.sources import package_folder
from asya_cdk.spark_updates import ApplicationGuards
from asya_cdk.tasks import TaskTables, mesh_table, string_key
from asya_spark.collect import JOB_STATE_CHANGE
from asya_spark.jobs import TERMINAL
from asya_spark.ledger import OPEN_INDEX, key_prefix
from asya_spark.staging import staging_prefix

JOB_PYTHON_VERSION = "3.11"
JOB_LEAVES_OUT = frozenset({"boto3", "botocore", "s3transfer"})
COLLECTOR_TIMEOUT = cdk.Duration.minutes(10)
_EMR_ARCHITECTURES = {"arm64": "ARM64", "x86_64": "X86_64"}


def spark_archive_bundling(
    architecture: str, own: Requirements | None = None, python: str = JOB_PYTHON_VERSION
) -> LibraryBundling:
    """The job's dependency archive: the core and `asya_spark_job` with their dependencies, and the
    actor's own libraries (`own`), resolved together for the application's platform. The job never
    calls AWS, so the SDK itself stays out (unless the actor names it); what Powertools imports
    (jmespath) stays in."""
    own = own or Requirements()
    core = Requirements(tuple(layer_requirements()), source="the Spark job's archive")
    without = frozenset() if own.named() & JOB_LEAVES_OUT else JOB_LEAVES_OUT  # the SDK: all of it, or none
    build = Build(own + core, Target.linux(architecture, python), without=without)
    packages = {package: package_folder(package) for package in ("asya", "asya_spark_job")}
    return LibraryBundling([build], packages)


def batches_table(scope: Construct, name: str) -> dynamodb.Table:
    """Every Spark batch and hop claim of the mesh; the sparse `open` index lists unrouted batches."""
    table = mesh_table(scope, "SparkBatches", string_key("pk"), table_name=name)  # claims expire on `expires_at`
    table.add_global_secondary_index(
        index_name=OPEN_INDEX,
        partition_key=dynamodb.Attribute(name="open_actor", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="staged_at", type=dynamodb.AttributeType.NUMBER),
    )
    return table


class SparkActor(Construct):
    """Exposes `application`, `job_role`, `collector` (a `MeshFunction`), `state_rule`, `reconcile_rule`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        mesh: LoadedMesh,
        name: str,
        dispatcher: ActorFunction,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
        task_tables: TaskTables,
        layer: SidecarLayer,
        names: MeshNames,
        job_images: JobImages | None = None,
        guards: ApplicationGuards | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        settings = mesh.config.actors[name]
        spark = settings.spark
        assert spark is not None  # the config gives every spark actor its settings
        namespace = mesh.config.namespace
        stack = cdk.Stack.of(self)
        application_name = resource_name(namespace, name)
        if spark.image_uri:
            image_uri, copy = spark.image_uri, None
        else:
            assert job_images is not None  # the mesh makes the repository when an actor needs it
            image_uri, copy = job_images.image(spark.release, settings.architecture)
        self.log_group = log_group(
            self, "JobLogs", f"/aws/emr-serverless/{application_name}", settings.log_retention_days
        )
        self.application = emrserverless.CfnApplication(
            self,
            "Application",
            name=application_name,
            release_label=spark.release,
            type="SPARK",
            architecture=_EMR_ARCHITECTURES[settings.architecture],
            auto_start_configuration={"enabled": True},
            auto_stop_configuration={"enabled": True, "idleTimeoutMinutes": spark.idle_minutes},
            maximum_capacity={
                "cpu": f"{spark.max_vcpu} vCPU",
                "memory": f"{spark.max_memory_gb} GB",
                "disk": f"{spark.max_disk_gb} GB",
            },
            image_configuration={"imageUri": image_uri},
            monitoring_configuration={
                "cloudWatchLoggingConfiguration": {"enabled": True, "logGroupName": self.log_group.log_group_name}
            },
        )
        if copy is not None:
            self.application.node.add_dependency(copy)  # EMR Serverless checks the image on creation
        if guards is not None:
            guards.guard(self.application, name)  # stopped before an update or deletion, refused while it runs
        self.job_role = iam.Role(
            self,
            "JobRole",
            assumed_by=iam.ServicePrincipal(
                "emr-serverless.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    # the application, or a run of it (`<application>/jobruns/<id>`), whichever EMR names
                    "ArnLike": {"aws:SourceArn": [self.application.attr_arn, f"{self.application.attr_arn}/*"]},
                },
            ),
            description=f"asya Spark job {namespace}/{name}",
        )
        entry = s3_assets.Asset(self, "Entry", path=str(package_folder("asya_spark_job") / "entry.py"))
        code = s3_assets.Asset(self, "Code", path=str(mesh.code_dir(name)), exclude=list(ACTOR_CODE_EXCLUDE))
        environment = s3_assets.Asset(
            self,
            "Environment",
            path=str(package_folder("asya_spark_job")),
            exclude=["**/__pycache__", "*.md"],
            asset_hash_type=cdk.AssetHashType.OUTPUT,  # what pip installs is not in the source folder
            bundling=cdk.BundlingOptions(
                image=cdk.DockerImage.from_registry("public.ecr.aws/amazonlinux/amazonlinux:2023"),
                local=spark_archive_bundling(settings.architecture, mesh.requirements(name)),  # type: ignore[arg-type]
            ),
        )
        prefix = staging_prefix(namespace, name)
        self._job_permissions(bucket, prefix, [entry, code, environment])
        grant_permissions(self.job_role, name, settings.permissions)  # the handler runs in the job
        if settings.tracing:  # the job's hops write their segments with the API: EMR runs no X-Ray daemon
            grant_trace_segments(self.job_role)
        own = SparkNames(
            application_id=self.application.attr_application_id,
            job_role_arn=self.job_role.role_arn,
            entry_point=entry.s3_object_url,
            code_url=code.s3_object_url,
            environment_url=environment.s3_object_url,
        )
        variables = spark_environment(mesh, name, names, own)
        for key, value in variables.items():
            dispatcher.function.add_environment(key, value)
        self.collector = MeshFunction(
            self,
            "Collector",
            name=collector_name(namespace, name),
            code=mesh_code(),
            handler="asya_spark.collect.lambda_handler",
            environment=variables,
            layer=layer,
            timeout=COLLECTOR_TIMEOUT,
            memory=1024,
            tracing=settings.tracing,
            system_log_level=settings.system_log_level,
        )
        # the queues it sends to: the mesh's actors' and the crew's it routes to (`asya_cdk.queue_grants`)
        for statement in task_tables.hop_reporting():
            self.collector.role.add_to_policy(statement)
        self._function_permissions(
            dispatcher=dispatcher.role,
            collector=self.collector.role,
            bucket=bucket,
            prefix=prefix,
            table=table,
            keys=key_prefix(namespace, name),
        )
        target = targets.LambdaFunction(self.collector.function, retry_attempts=4)
        self.state_rule = events.Rule(
            self,
            "JobStateChanges",
            description=f"{application_name}: a job run ended; the collector routes its batch",
            event_pattern=events.EventPattern(
                source=["aws.emr-serverless"],
                detail_type=[JOB_STATE_CHANGE],
                detail={"applicationId": [self.application.attr_application_id], "state": sorted(TERMINAL)},
            ),
            targets=[target],
        )
        self.reconcile_rule = events.Rule(
            self,
            "Reconcile",
            description=f"{application_name}: settle batches whose job-state event was missed",
            schedule=events.Schedule.rate(cdk.Duration.minutes(spark.reconcile_minutes)),
            targets=[target],
        )
        self._explain_findings(dispatcher.role, bucket, prefix)

    def _explain_findings(self, dispatcher: iam.IRole, bucket: s3.IBucket, prefix: str) -> None:
        """cdk-nag's wildcard findings here are prefixes of this actor's own, each acknowledged."""
        bucket_arn = nag_arn(self, bucket)
        application_arn = nag_arn(self, self.application)
        staging = f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_arn}/{prefix}*]"
        runs = f"AwsSolutions::AwsSolutions-IAM5[Resource::{application_arn}/jobruns/*]"
        reasons = {
            staging: "A Spark actor stages each batch under its own prefix (one folder per batch id), so its "
            "functions and job may reach objects under that prefix only.",
            runs: "Job run ids are made by EMR Serverless when a run starts, so starting, reading and canceling "
            "runs is scoped to this actor's application and nothing wider.",
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_arn}/{prefix}*/output/*]": "The job writes its "
            "batch's output folder (Spark's committer writes, renames and deletes there) and nothing else.",
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_arn}/{prefix}*/output_$folder$]": "EMRFS marks the "
            "batch's output folder with one object beside it; the job may write that marker and nothing else.",
            "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:"
            "log-group:*]": "logs:DescribeLogGroups takes no narrower resource; EMR Serverless calls it before it "
            "writes the job's logs to the application's own log group.",
        }
        for role in (dispatcher, self.collector.role, self.job_role):
            for finding, reason in reasons.items():
                cdk.Validations.of(role).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))

    def _job_permissions(self, bucket: s3.IBucket, prefix: str, assets: list[s3_assets.Asset]) -> None:
        """The job reads its code and its batch's input, writes its batch's output (Spark's committer
        writes, renames and deletes under the output folder), and writes its logs."""
        role = self.job_role
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[f"arn:{cdk.Aws.PARTITION}:s3:::{a.s3_bucket_name}/{a.s3_object_key}" for a in assets],
            )
        )
        # EMRFS may probe the staging prefix's parent "folders" (`spark/<ns>/<actor>`, `spark/<ns>`) with a
        # HEAD; a 403 there would fail the job, so those keys may be read too (nothing is stored at them)
        parents = [prefix.rstrip("/"), prefix.rstrip("/").rsplit("/", 1)[0]]
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[bucket.arn_for_objects(f"{prefix}*"), *(bucket.arn_for_objects(p) for p in parents)],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject", "s3:DeleteObject"],
                # EMRFS marks a written folder with a `<folder>_$folder$` object beside it
                resources=[
                    bucket.arn_for_objects(f"{prefix}*/output/*"),
                    bucket.arn_for_objects(f"{prefix}*/output_$folder$"),
                ],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
        self.log_group.grant_write(role)
        # EMR Serverless's CloudWatch logging looks the group and its streams up before writing
        role.add_to_policy(
            iam.PolicyStatement(actions=["logs:DescribeLogStreams"], resources=[self.log_group.log_group_arn])
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:DescribeLogGroups"],
                resources=[f"arn:{cdk.Aws.PARTITION}:logs:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:log-group:*"],
            )
        )

    def _function_permissions(
        self,
        *,
        dispatcher: iam.Role,
        collector: iam.Role,
        bucket: s3.IBucket,
        prefix: str,
        table: dynamodb.ITable,
        keys: str,
    ) -> None:
        own_keys = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{keys}*"]}}
        runs = [self.application.attr_arn, f"{self.application.attr_arn}/jobruns/*"]
        pass_role = iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[self.job_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}},
        )
        dispatcher.add_to_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{prefix}*")])
        )
        dispatcher.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:BatchGetItem",
                    "dynamodb:BatchWriteItem",
                ],
                resources=[table.table_arn],
                conditions=own_keys,
            )
        )
        dispatcher.add_to_policy(
            iam.PolicyStatement(actions=["emr-serverless:StartJobRun", "emr-serverless:TagResource"], resources=runs)
        )
        dispatcher.add_to_policy(pass_role)
        collector.add_to_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{prefix}*")])
        )
        collector.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
        collector.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"],
                resources=[table.table_arn, f"{table.table_arn}/index/{OPEN_INDEX}"],
                conditions=own_keys,
            )
        )
        collector.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "emr-serverless:GetJobRun",
                    "emr-serverless:CancelJobRun",
                    "emr-serverless:StartJobRun",
                    "emr-serverless:TagResource",
                ],
                resources=runs,
            )
        )
        collector.add_to_policy(pass_role)
