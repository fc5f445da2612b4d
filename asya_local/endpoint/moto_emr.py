"""Make moto's EMR Serverless run jobs for real: `apply_emr_fix(runner)` patches moto 5.2.5 in place.

moto keeps EMR Serverless's control plane only: every job run is `SUCCESS` the moment it is started,
and `clientToken` is ignored, so a repeated start makes a second run. The patch gives the local stack
AWS's behaviour: a start with a known client token returns the existing run; a new run is `SUBMITTED`
and handed to a `JobRunner` (the local Spark runner), which moves it through `RUNNING` to `SUCCESS`,
`FAILED` or `CANCELLED`; a cancel reaches the runner too. A job started on a CREATED or STOPPED
application with auto start starts the application, which then stays STARTED (locally nothing stops
it when idle), so an update of it is refused, as AWS refuses it, until it is stopped
(`asya_spark.stopper`). Dispatchers and collectors call the same APIs as on AWS and see the same states.

Two more of moto's answers differ from AWS's: a new application is STARTED (AWS: CREATED, until a job or
a `StartApplication` starts it), and `ListJobRuns` of an application that never ran a job is
`ResourceNotFoundException` (AWS: no runs). The patch answers as AWS does, so the guard's drain
(`asya_spark.draining`) meets here what it meets there.
"""

from __future__ import annotations

from typing import Any, Protocol

from moto.emrserverless.models import EMRServerlessBackend, JobRun

SUBMITTED = "SUBMITTED"


class JobRunner(Protocol):
    def submit(self, job_run: JobRun) -> None:
        """Run the job; set `job_run.state` (and `state_details`) as it progresses."""

    def cancel(self, job_run: JobRun) -> None:
        """Stop the job if it is running; the run is already marked `CANCELLED`."""


class _Patch:
    runner: JobRunner | None = None


_ORIGINAL_START = EMRServerlessBackend.start_job_run
_ORIGINAL_CANCEL = EMRServerlessBackend.cancel_job_run
_ORIGINAL_CREATE = EMRServerlessBackend.create_application
_ORIGINAL_LIST_RUNS = EMRServerlessBackend.list_job_runs


def _create_application(self: EMRServerlessBackend, *args: Any, **kwargs: Any) -> Any:
    created = _ORIGINAL_CREATE(self, *args, **kwargs)
    created.state = "CREATED"
    return created


def _list_job_runs(self: EMRServerlessBackend, application_id: str, *args: Any, **kwargs: Any) -> list[JobRun]:
    if application_id in self.applications and application_id not in self.job_runs:
        return []  # an application that never ran a job has no runs; moto calls it unknown
    found: list[JobRun] = _ORIGINAL_LIST_RUNS(self, application_id, *args, **kwargs)
    return found


def _start_job_run(
    self: EMRServerlessBackend, application_id: str, client_token: str, *args: Any, **kwargs: Any
) -> JobRun:
    for existing in self.job_runs.get(application_id, []):
        if client_token and existing.client_token == client_token:
            return existing  # AWS: the same token within the application returns the same run
    job_run = _ORIGINAL_START(self, application_id, client_token, *args, **kwargs)
    job_run.state = SUBMITTED
    application = self.applications[application_id]
    if application.state in ("CREATED", "STOPPED") and _auto_starts(application.auto_start_configuration):
        application.state = "STARTED"  # AWS starts an auto-start application for a job, and it stays up
    if _Patch.runner is not None:
        _Patch.runner.submit(job_run)
    return job_run


def _auto_starts(configuration: Any) -> bool:
    return not isinstance(configuration, dict) or configuration.get("enabled", True) is not False


def _cancel_job_run(self: EMRServerlessBackend, application_id: str, job_run_id: str) -> tuple[str, str]:
    result = _ORIGINAL_CANCEL(self, application_id, job_run_id)
    if _Patch.runner is not None:
        _Patch.runner.cancel(self.get_job_run(application_id, job_run_id))
    return result


def apply_emr_fix(runner: JobRunner | None = None) -> JobRunner | None:
    """Patch moto's EMR Serverless backend in this process (idempotent); `runner` runs new job runs
    (without one they stay `SUBMITTED`, as on an application that cannot start). Returns the runner
    it replaces, for whoever borrows the patch to give it back."""
    previous, _Patch.runner = _Patch.runner, runner
    if not getattr(EMRServerlessBackend, "_asya_emr_fix", False):
        setattr(EMRServerlessBackend, "start_job_run", _start_job_run)  # noqa: B010 - mypy: no method-assign
        setattr(EMRServerlessBackend, "cancel_job_run", _cancel_job_run)  # noqa: B010
        setattr(EMRServerlessBackend, "create_application", _create_application)  # noqa: B010
        setattr(EMRServerlessBackend, "list_job_runs", _list_job_runs)  # noqa: B010
        setattr(EMRServerlessBackend, "_asya_emr_fix", True)  # noqa: B010
    return previous
