"""What a Spark actor's dispatcher and collector are told by their environment.

Both functions get the actor's sidecar variables (so `SidecarConfig` reads them as it would for a
Lambda actor: queue names, resiliency, status tables) plus the `ASYA_SPARK_*` variables below, set by
`asya_cdk.environment` from the mesh file.

The job's handler runs with the actor's variables too, but they are not written twice (Lambda caps a
function's whole environment at 4 KB): the functions forward the handler's sidecar settings and the
actor's own variables, which `ASYA_SPARK_JOB_VARIABLES` names, from their own environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from asya import variables
from asya.config import SidecarConfig
from asya.variables import ConfigError

# A job that has not ended this long after its own execution timeout is canceled by the reconciler.
JOB_TIMEOUT_GRACE_SECONDS = 300
# What the job's handler needs of the sidecar's settings; never the tables (the job reaches none).
JOB_UNBOUNDED_BYTES = 5 * 1024**3  # an S3 object's most, what a claim-checked payload may be
JOB_SIDECAR_VARIABLES = tuple(
    variable.name
    for variable in (
        variables.NAMESPACE,
        variables.ACTOR,
        variables.HANDLER,
        variables.HANDLER_MODE,
        variables.ACTOR_TIMEOUT,
        variables.RESILIENCY,
        variables.TRACING,
        variables.SPARK_STYLE,
        variables.JOINED_BY,  # a Spark actor's branches may be joined: the job stamps their frames
        variables.FLOW_VERSIONS,  # the job takes its batch's program decisions: only deployed programs
    )
)


@dataclass(frozen=True, slots=True)
class SparkSettings:
    sidecar: SidecarConfig
    bucket: str  # staging: spark/<ns>/<actor>/<batch>/{input.jsonl,output/}
    batches_table: str
    application_id: str
    job_role_arn: str
    entry_point: str  # s3:// URI of spark_emr/asya_spark_job/entry.py
    submit_parameters: str  # --py-files, --archives, --conf ...
    job_env: dict[str, str]  # the variables the job's handler runs with (`--actor-env`)
    job_timeout_minutes: int = variables.SPARK_JOB_TIMEOUT_MINUTES.default
    start_grace_seconds: float = 120.0  # a batch staged but not started this long ago is started by the reconciler
    # One collector routes a batch at a time, under a lease sized to the batch: long enough for a routing
    # (a status write and a tenth of a send per envelope, tens of milliseconds on AWS, with ample margin),
    # short enough that a collector that died while routing holds the batch back for seconds, not minutes.
    routing_lease_base_seconds: float = 30.0
    routing_lease_per_envelope_seconds: float = 0.05

    def routing_lease_seconds(self, size: int) -> float:
        return self.routing_lease_base_seconds + self.routing_lease_per_envelope_seconds * size

    @property
    def namespace(self) -> str:
        return self.sidecar.namespace

    @property
    def actor(self) -> str:
        return self.sidecar.actor

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SparkSettings:
        env = os.environ if env is None else env
        variables.require_all(
            env,
            "a Spark actor's functions",
            variables.SPARK_STAGING_BUCKET,
            variables.SPARK_BATCHES_TABLE,
            variables.SPARK_APPLICATION_ID,
            variables.SPARK_JOB_ROLE_ARN,
            variables.SPARK_ENTRY_POINT,
        )
        return cls(
            sidecar=SidecarConfig.from_env(env),
            bucket=variables.SPARK_STAGING_BUCKET.read(env),
            batches_table=variables.SPARK_BATCHES_TABLE.read(env),
            application_id=variables.SPARK_APPLICATION_ID.read(env),
            job_role_arn=variables.SPARK_JOB_ROLE_ARN.read(env),
            entry_point=variables.SPARK_ENTRY_POINT.read(env),
            submit_parameters=variables.SPARK_SUBMIT_PARAMETERS.read(env),
            job_env=job_environment(env),
            job_timeout_minutes=variables.SPARK_JOB_TIMEOUT_MINUTES.read(env),
        )

    @property
    def job_deadline_seconds(self) -> float:
        """How long a job may stay unfinished before the reconciler cancels it."""
        return self.job_timeout_minutes * 60 + JOB_TIMEOUT_GRACE_SECONDS


def job_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The job's variables, taken from the function's own: the handler's settings and the actor's."""
    own = [name for name in variables.SPARK_JOB_VARIABLES.read(env).split(",") if name]
    missing = [name for name in own if name not in env]
    if missing:
        names = ", ".join(missing)
        raise ConfigError(f"{variables.SPARK_JOB_VARIABLES.name} names {names}, which the function's environment lacks")
    job = {name: env[name] for name in (*JOB_SIDECAR_VARIABLES, *own) if name in env}
    if env.get(variables.CLAIM_BUCKET.name):
        # the job never calls AWS: the dispatcher stages payloads whole, and the collector claim-checks
        # the job's large outputs before it sends them (`asya.claims`), so the job holds none back
        job[variables.MAX_MESSAGE_BYTES.name] = str(JOB_UNBOUNDED_BYTES)
    return job
