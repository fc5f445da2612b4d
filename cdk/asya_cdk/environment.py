"""Every variable the mesh sets on its functions, built in one place.

The CDK constructs call these with deploy-time tokens for the names AWS generates (the results
bucket, role ARNs, asset URLs, the EMR Serverless application id); `asya_cdk.limits` calls them with
the longest values those names can take, to bound each function's environment before anything is
deployed. Whatever a construct sets, the estimate counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from asya.names import (
    CREW,
    GATEWAY,
    GATEWAY_BACKSTOP,
    GATEWAY_FUNCTIONS,
    SINK,
    collector_name,
    resource_name,
)

if TYPE_CHECKING:
    from asya_cdk.config import LoadedMesh, SparkConfig

ENVIRONMENT_ARCHIVE = "asya_env"  # where a Spark job's dependency archive is unpacked on every node
# A Spark actor's own `environment` reaches its job by name: the functions forward these variables.
JOB_VARIABLES = "ASYA_SPARK_JOB_VARIABLES"


@dataclass(frozen=True)
class MeshNames:
    """The names of the mesh's shared resources, as its functions are told them."""

    bucket: str
    tasks_table: str
    events_table: str
    idempotency_table: str
    batches_table: str

    def resources(self, *, idempotency: bool = True) -> dict[str, str]:
        """What `LoadedMesh.actor_environment` takes: the tables an actor's sidecar writes."""
        tables = {"tasks_table": self.tasks_table, "events_table": self.events_table}
        return {**tables, "idempotency_table": self.idempotency_table} if idempotency else tables


@dataclass(frozen=True)
class SparkNames:
    """What one Spark actor's functions are told about its application, job role and job code."""

    application_id: str
    job_role_arn: str
    entry_point: str  # s3:// URL of the job's entry script
    code_url: str  # s3:// URL of the actor's code
    environment_url: str  # s3:// URL of the job's dependency archive


@dataclass(frozen=True)
class FunctionEnvironment:
    """One function's variables, and the mesh file's field that decides their size."""

    function: str
    field: str
    what: str  # how a user knows the function: "the dispatcher", "the gateway's API function"
    variables: dict[str, str]


def crew_environment(mesh: LoadedMesh, names: MeshNames, crew: str) -> dict[str, str]:
    variables = {
        "ASYA_NAMESPACE": mesh.config.namespace,
        "ASYA_RESULTS_BUCKET": names.bucket,
        **mesh.status_environment(names.resources(idempotency=False)),
    }
    if crew == SINK:  # x-sink claims each record in the hop ledger: a redelivery keeps nothing twice
        variables["ASYA_IDEMPOTENCY_TABLE"] = names.idempotency_table
        variables["ASYA_SINK_HOOKS"] = json.dumps([hook.model_dump() for hook in mesh.config.sink_hooks])
        variables["ASYA_RESULTS_INLINE_MAX_BYTES"] = str(mesh.config.results.inline_max_bytes)
        variables["ASYA_RESULTS_TTL_SECONDS"] = str(mesh.config.results.retention_seconds)
    return variables


def gateway_environment(mesh: LoadedMesh, names: MeshNames, function: str) -> dict[str, str]:
    """The API function gets the flows (what it starts and lists as MCP tools) and the results bucket;
    the backstop the bucket; the stream consumer only the tables."""
    own = {
        GATEWAY: {"ASYA_RESULTS_BUCKET": names.bucket, "ASYA_FLOWS": mesh.config.flows_json()},
        GATEWAY_BACKSTOP: {"ASYA_RESULTS_BUCKET": names.bucket},
    }.get(function, {})
    return {
        "ASYA_NAMESPACE": mesh.config.namespace,
        **mesh.status_environment(names.resources(idempotency=False)),
        **own,
        "POWERTOOLS_SERVICE_NAME": function,
    }


def lambda_actor_environment(mesh: LoadedMesh, actor: str, names: MeshNames) -> dict[str, str]:
    return mesh.actor_environment(actor, names.resources())


def spark_environment(mesh: LoadedMesh, actor: str, names: MeshNames, spark_names: SparkNames) -> dict[str, str]:
    """A Spark actor's dispatcher and collector: the sidecar's variables (the dispatcher does not run
    the handler: hop claims in the batches table replace idempotency) and where the application,
    table and job are. The job's own variables are not repeated: the functions forward the sidecar's
    handler settings and the variables `ASYA_SPARK_JOB_VARIABLES` names (`asya_spark.settings`)."""
    settings = mesh.config.actors[actor]
    spark = settings.spark
    assert spark is not None  # the config gives every Spark actor its settings
    variables = {
        **mesh.actor_environment(actor, names.resources(idempotency=False)),
        "ASYA_SPARK_STYLE": spark.style,
        "ASYA_SPARK_STAGING_BUCKET": names.bucket,
        "ASYA_SPARK_BATCHES_TABLE": names.batches_table,
        "ASYA_SPARK_APPLICATION_ID": spark_names.application_id,
        "ASYA_SPARK_JOB_ROLE_ARN": spark_names.job_role_arn,
        "ASYA_SPARK_ENTRY_POINT": spark_names.entry_point,
        "ASYA_SPARK_SUBMIT_PARAMETERS": submit_parameters(spark, spark_names.code_url, spark_names.environment_url),
        "ASYA_SPARK_JOB_TIMEOUT_MINUTES": str(spark.job_timeout_minutes),
    }
    if settings.environment:
        variables[JOB_VARIABLES] = ",".join(settings.environment)
    return variables


def submit_parameters(spark: SparkConfig, code_url: str, environment_url: str) -> str:
    """`sparkSubmitParameters`: the actor's code on every node's path, the core's archive unpacked on
    every node and put on its path, the Python that runs the handler, and the mesh file's own `conf`."""
    conf = {
        "spark.archives": f"{environment_url}#{ENVIRONMENT_ARCHIVE}",
        "spark.emr-serverless.driverEnv.PYTHONPATH": f"./{ENVIRONMENT_ARCHIVE}",
        "spark.executorEnv.PYTHONPATH": f"./{ENVIRONMENT_ARCHIVE}",
        "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON": spark.python,
        "spark.emr-serverless.driverEnv.PYSPARK_PYTHON": spark.python,
        "spark.executorEnv.PYSPARK_PYTHON": spark.python,
        "spark.executorEnv.POWERTOOLS_METRICS_DISABLED": "true",
        **spark.conf,
    }
    return " ".join([f"--py-files {code_url}", *(f"--conf {key}={value}" for key, value in conf.items())])


def every_function(
    mesh: LoadedMesh, names: MeshNames, spark_names: Callable[[str], SparkNames]
) -> list[FunctionEnvironment]:
    """Every function the mesh makes, with the variables it gets and the field a user would change."""
    namespace = mesh.config.namespace
    functions = []
    for actor, settings in mesh.config.actors.items():
        field = f"actors.{actor}.environment"
        if settings.runtime == "spark":
            variables = spark_environment(mesh, actor, names, spark_names(actor))
            functions.append(FunctionEnvironment(resource_name(namespace, actor), field, "the dispatcher", variables))
            collector = collector_name(namespace, actor)
            functions.append(FunctionEnvironment(collector, field, "the collector", variables))
        else:
            variables = lambda_actor_environment(mesh, actor, names)
            functions.append(FunctionEnvironment(resource_name(namespace, actor), field, "the function", variables))
    for crew in CREW:
        field = "sink_hooks" if crew == SINK else "namespace"
        variables = crew_environment(mesh, names, crew)
        functions.append(FunctionEnvironment(resource_name(namespace, crew), field, f"{crew}'s function", variables))
    for function in GATEWAY_FUNCTIONS:
        field = "flows" if function == GATEWAY else "namespace"
        variables = gateway_environment(mesh, names, function)
        functions.append(FunctionEnvironment(resource_name(namespace, function), field, f"the {function}", variables))
    return functions
