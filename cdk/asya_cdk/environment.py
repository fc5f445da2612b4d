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
from pathlib import Path
from typing import TYPE_CHECKING

from asya.names import (
    BACKLOG,
    CREW,
    GATEWAY,
    GATEWAY_BACKSTOP,
    GATEWAY_FUNCTIONS,
    RESUME,
    SINK,
    SPARK_GUARD,
    SUMP,
    collector_name,
    resource_name,
)
from asya.variables import (
    FLOW_PROGRAMS,
    FLOW_VERSIONS,
    FLOWS,
    FLY_DOMAIN,
    FLY_REALTIME_DOMAIN,
    GATEWAY_AUTH,
    GATEWAY_CORS_ORIGINS,
    GATEWAY_CURSOR_SECRET,
    IDEMPOTENCY_TABLE,
    MCP_WAIT,
    NAMESPACE,
    RESULTS_BUCKET,
    RESULTS_INLINE_MAX_BYTES,
    RESULTS_TTL,
    SEAL_SECRET,
    SINK_HOOKS,
    SPARK_APPLICATION_ID,
    SPARK_BATCHES_TABLE,
    SPARK_ENTRY_POINT,
    SPARK_JOB_ROLE_ARN,
    SPARK_JOB_TIMEOUT_MINUTES,
    SPARK_JOB_VARIABLES,
    SPARK_STAGING_BUCKET,
    SPARK_STYLE,
    SPARK_SUBMIT_PARAMETERS,
    SUMP_TABLE,
    TRACING,
)

if TYPE_CHECKING:
    from asya.startup import FileSource
    from asya_cdk.actor_config import SparkConfig
    from asya_cdk.gateway_config import UserPoolNames
    from asya_cdk.loaded_mesh import LoadedMesh

ENVIRONMENT_ARCHIVE = "asya_env"  # where a Spark job's dependency archive is unpacked on every node


@dataclass(frozen=True)
class MeshNames:
    """The names of the mesh's shared resources, as its functions are told them."""

    bucket: str
    tasks_table: str
    events_table: str
    idempotency_table: str
    batches_table: str
    sump_table: str
    joins_table: str = ""  # made when the mesh has a join actor
    user_pool: UserPoolNames | None = None  # made for sign-in when `gateway.jwt.cognito` (the gateway's)
    cursor_secret: str = ""  # the ARN of the secret the gateway seals its cursors with (the gateway's)
    seal_secret: str = ""  # the ARN of the secret the mesh seals its envelopes with (`asya.seal`)
    state_table: str = ""  # made when an actor has `state:`
    state_bucket: str = ""  # made with the state table
    fly_domain: str = ""  # FLY's fast lane (`gateway.fly: channel`): the Event API's HTTP domain
    fly_realtime_domain: str = ""  # and its real-time one (the gateway's)

    def resources(self, *, idempotency: bool = True) -> dict[str, str]:
        """What `LoadedMesh.actor_environment` takes: the tables an actor's sidecar writes."""
        tables = {"tasks_table": self.tasks_table, "events_table": self.events_table, "bucket": self.bucket}
        if self.joins_table:
            tables["joins_table"] = self.joins_table
        if self.seal_secret:
            tables["seal_secret"] = self.seal_secret
        if self.state_table:
            tables["state_table"] = self.state_table
        if self.state_bucket:
            tables["state_bucket"] = self.state_bucket
        return {**tables, "idempotency_table": self.idempotency_table} if idempotency else tables

    def fly_environment(self, *, follows: bool = False) -> dict[str, str]:
        """Where FLY events go (an actor), and where a follow hears them (`follows`: the gateway's API)."""
        if not self.fly_domain:
            return {}
        return {FLY_DOMAIN.name: self.fly_domain} | (
            {FLY_REALTIME_DOMAIN.name: self.fly_realtime_domain} if follows else {}
        )


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
        NAMESPACE.name: mesh.config.namespace,
        RESULTS_BUCKET.name: names.bucket,
        **mesh.status_environment(names.resources(idempotency=False)),
        **mesh.claim_environment(names.bucket),
    }
    if names.seal_secret:  # the crew takes the mesh's own envelopes only, and seals what it sends
        variables[SEAL_SECRET.name] = names.seal_secret
    if mesh.config.tracing:  # the crew's hops are a traced task's last (`mesh.tracing`)
        variables[TRACING.name] = "true"
    if crew == SINK:  # x-sink claims each record in the hop ledger: a redelivery keeps nothing twice
        variables[IDEMPOTENCY_TABLE.name] = names.idempotency_table
        variables[SINK_HOOKS.name] = json.dumps([hook.model_dump() for hook in mesh.config.sink_hooks])
        variables[RESULTS_INLINE_MAX_BYTES.name] = str(mesh.config.results.inline_max_bytes)
        variables[RESULTS_TTL.name] = str(mesh.config.results.retention_seconds)
    if crew == RESUME and mesh.programs:  # x-resume runs a resumed task's program: only a deployed one
        variables[FLOW_VERSIONS.name] = mesh.flow_versions()
    if crew == SUMP:  # x-sump lists what it keeps in the sump table, for as long as it keeps it
        variables[SUMP_TABLE.name] = names.sump_table
        variables[RESULTS_TTL.name] = str(mesh.config.results.retention_seconds)
    return variables


PROGRAMS_FILE = "flow_programs.json"  # in the gateway's code, beside `asya_gateway` (`asya_gateway.settings`)


def gateway_environment(mesh: LoadedMesh, names: MeshNames, function: str) -> dict[str, str]:
    """The API function gets the flows (what it starts and lists as MCP tools) and the results bucket;
    the backstop the bucket; the stream consumer only the tables."""
    gateway = mesh.config.gateway
    own = {
        GATEWAY: {
            RESULTS_BUCKET.name: names.bucket,
            FLOWS.name: mesh.flows_json(),
            **({FLOW_PROGRAMS.name: PROGRAMS_FILE} if mesh.programs else {}),
            SUMP_TABLE.name: names.sump_table,
            **({GATEWAY_CURSOR_SECRET.name: names.cursor_secret} if names.cursor_secret else {}),
            **({SEAL_SECRET.name: names.seal_secret} if names.seal_secret else {}),
            GATEWAY_AUTH.name: json.dumps(mesh.config.gateway.auth_document(names.user_pool), separators=(",", ":")),
            **({GATEWAY_CORS_ORIGINS.name: ",".join(origins)} if (origins := mesh.config.gateway.cors_origins) else {}),
            **({MCP_WAIT.name: str(wait)} if (wait := gateway.mcp_wait_seconds) != MCP_WAIT.default else {}),
            **mesh.claim_environment(names.bucket),
            **names.fly_environment(follows=True),
            **({TRACING.name: "true"} if gateway.tracing else {}),
        },
        GATEWAY_BACKSTOP: {RESULTS_BUCKET.name: names.bucket},
    }.get(function, {})
    return {
        NAMESPACE.name: mesh.config.namespace,
        **mesh.status_environment(names.resources(idempotency=False)),
        **own,
        "POWERTOOLS_SERVICE_NAME": function,
    }


def lambda_actor_environment(
    mesh: LoadedMesh, actor: str, names: MeshNames, files: dict[str, FileSource] | None = None
) -> dict[str, str]:
    return {**mesh.actor_environment(actor, names.resources(), files), **names.fly_environment()}


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
        SPARK_STYLE.name: spark.style,
        SPARK_STAGING_BUCKET.name: names.bucket,
        SPARK_BATCHES_TABLE.name: names.batches_table,
        SPARK_APPLICATION_ID.name: spark_names.application_id,
        SPARK_JOB_ROLE_ARN.name: spark_names.job_role_arn,
        SPARK_ENTRY_POINT.name: spark_names.entry_point,
        SPARK_SUBMIT_PARAMETERS.name: submit_parameters(spark, spark_names.code_url, spark_names.environment_url),
        SPARK_JOB_TIMEOUT_MINUTES.name: str(spark.job_timeout_minutes),
    }
    if settings.environment:
        variables[SPARK_JOB_VARIABLES.name] = ",".join(settings.environment)
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
    mesh: LoadedMesh,
    names: MeshNames,
    spark_names: Callable[[str], SparkNames],
    asset_url: Callable[[str, Path], str],
) -> list[FunctionEnvironment]:
    """Every function the mesh makes, with the variables it gets and the field a user would change
    (`asset_url(variable, path)`: a shipped file's asset URL)."""
    namespace = mesh.config.namespace
    functions = []
    for actor, settings in mesh.config.actors.items():
        field = f"actors.{actor}.environment"
        if settings.runtime == "container":
            continue  # no function: its variables are in a task definition, which holds 64 KiB, not 4 KB
        if settings.runtime == "spark":
            variables = spark_environment(mesh, actor, names, spark_names(actor))
            functions.append(FunctionEnvironment(resource_name(namespace, actor), field, "the dispatcher", variables))
            collector = collector_name(namespace, actor)
            functions.append(FunctionEnvironment(collector, field, "the collector", variables))
        else:
            variables = lambda_actor_environment(mesh, actor, names, mesh.file_sources(actor, asset_url))
            functions.append(FunctionEnvironment(resource_name(namespace, actor), field, "the function", variables))
    for crew in CREW:
        field = "sink_hooks" if crew == SINK else "namespace"
        variables = crew_environment(mesh, names, crew)
        functions.append(FunctionEnvironment(resource_name(namespace, crew), field, f"{crew}'s function", variables))
    for function in GATEWAY_FUNCTIONS:
        field = "flows" if function == GATEWAY else "namespace"
        variables = gateway_environment(mesh, names, function)
        functions.append(FunctionEnvironment(resource_name(namespace, function), field, f"the {function}", variables))
    if mesh.spark_actors:  # `asya_cdk.spark_updates`: it needs no variables
        guard = resource_name(namespace, SPARK_GUARD)
        functions.append(FunctionEnvironment(guard, "namespace", "the Spark applications' guard", {}))
    if mesh.container_actors:  # `asya_cdk.container_backlog`: its schedule's input says what it reads
        backlog = resource_name(namespace, BACKLOG)
        functions.append(FunctionEnvironment(backlog, "namespace", "the container actors' backlog publisher", {}))
    return functions
