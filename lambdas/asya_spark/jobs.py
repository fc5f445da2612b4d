"""Starting, reading and canceling a batch's EMR Serverless job run.

A start is idempotent: the request's `clientToken` is the batch id and a digest of what the job runs
(entry point, submit parameters with the code and archive URLs, role, variables, timeout), so a
dispatcher that runs again for the same batch (a redelivery, or the reconciler finishing a start that
crashed) gets the same job run back instead of a second one, while a batch staged before a deploy that
changed the job and started after it sends a new token rather than one AWS saw with other parameters.
The batch id is also the run's name, which is how a job-state event (which carries only the run id)
finds its batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from asya.clients import LazyClient
from asya_spark.settings import SparkSettings

if TYPE_CHECKING:
    from types_boto3_emr_serverless.client import EMRServerlessClient

SUCCESS = "SUCCESS"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
TERMINAL = frozenset({SUCCESS, FAILED, CANCELLED})


class SparkJobError(RuntimeError):
    """A Spark actor's job failed or was canceled as a whole. Every envelope of its batch gets this
    error, so resiliency rules can name it (`SparkJobError`) like any handler error."""


@dataclass(frozen=True, slots=True)
class JobRun:
    job_run_id: str
    batch_id: str
    state: str
    details: str
    duration_seconds: float | None


def client_token(batch_id: str, settings: SparkSettings) -> str:
    """`<batch id>-<16 hex digits of the job's definition>`: at most 64 characters of `[A-Za-z0-9._-]`
    for a 32-character batch id, as StartJobRun requires."""
    definition = orjson.dumps(
        [
            settings.application_id,
            settings.entry_point,
            settings.submit_parameters,
            settings.job_role_arn,
            settings.job_env,
            settings.job_timeout_minutes,
        ],
        option=orjson.OPT_SORT_KEYS,
    )
    return f"{batch_id}-{hashlib.sha256(definition).hexdigest()[:16]}"


class SparkJobs:
    client: LazyClient[EMRServerlessClient] = LazyClient("emr-serverless")

    def __init__(self, settings: SparkSettings, client: EMRServerlessClient | None = None) -> None:
        self.settings = settings
        self._client = client

    def start(self, batch_id: str, input_uri: str, output_uri: str, known: dict[str, str]) -> str:
        settings = self.settings
        arguments = [
            "--input",
            input_uri,
            "--output",
            output_uri,
            "--actor-env",
            orjson.dumps(settings.job_env).decode(),
        ]
        if known:
            arguments += ["--known", orjson.dumps(known).decode()]
        driver: Any = {"sparkSubmit": {"entryPoint": settings.entry_point, "entryPointArguments": arguments}}
        if settings.submit_parameters:
            driver["sparkSubmit"]["sparkSubmitParameters"] = settings.submit_parameters
        response = self.client.start_job_run(
            applicationId=settings.application_id,
            clientToken=client_token(batch_id, settings),
            executionRoleArn=settings.job_role_arn,
            name=batch_id,
            jobDriver=driver,
            executionTimeoutMinutes=settings.job_timeout_minutes,
            tags={"asya:namespace": settings.namespace, "asya:actor": settings.actor},
        )
        return response["jobRunId"]

    def get(self, job_run_id: str) -> JobRun:
        run: Any = self.client.get_job_run(applicationId=self.settings.application_id, jobRunId=job_run_id)["jobRun"]
        duration = run.get("totalExecutionDurationSeconds")
        return JobRun(
            job_run_id=job_run_id,
            batch_id=str(run.get("name", "")),
            state=str(run["state"]),
            details=str(run.get("stateDetails") or ""),
            duration_seconds=float(duration) if duration else None,
        )

    def cancel(self, job_run_id: str) -> None:
        self.client.cancel_job_run(applicationId=self.settings.application_id, jobRunId=job_run_id)
