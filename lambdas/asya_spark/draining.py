"""Bringing an EMR Serverless application to STOPPED, whatever runs on it, within a time budget.

EMR Serverless refuses `StopApplication` with a `ValidationException` while any job run is scheduled
or running ("all scheduled and running jobs must be completed or cancelled before stopping an
application"), and refuses `UpdateApplication` and `DeleteApplication` unless the application is
CREATED or STOPPED. So a stop is a loop: list the application's unfinished runs (`ListJobRuns`,
every page); while there are some, wait for them to end, and once the budget's `cancel_at` has passed
cancel them (`CancelJobRun`); when there are none, stop the application; until it is STOPPED or the
budget's `deadline` has passed. A run that ends between the listing and its cancel, or one that
starts between the listing and the stop (the stop is refused), is met again on the next round.

What a canceled run means for its envelopes: the collector routes its batch as for any canceled job
(`asya_spark.collect`): every envelope meets the actor's resiliency policy with `SparkJobError`, a
retry in a later batch if the policy retries it, or x-sink as failed. Nothing is lost, but a task may
fail, so an update drains first (`cancel_at` well after the start) and a deletion, which takes the
actor's queue and functions with it, cancels at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

RUNNING = ("STARTING", "STARTED")
STOPPED = ("CREATED", "STOPPED", "TERMINATED")  # nothing runs: it may be updated or deleted (or is gone)
# every state of a run that has not ended (CANCELLING too: the application cannot stop under it)
UNFINISHED = ("SUBMITTED", "PENDING", "SCHEDULED", "RUNNING", "QUEUED", "CANCELLING")
POLL_SECONDS = 5.0
# what AWS answers when a run or the application moved on since it was read: met again on the next round
MOVED_ON = ("ValidationException", "ResourceNotFoundException")


class StillRunningError(RuntimeError):
    """The application did not stop within the budget; the stack operation fails, as it would have."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Clock readings: runs still unfinished at `cancel_at` are canceled; at `deadline` the stop fails."""

    cancel_at: float
    deadline: float


def stop_application(
    client: Any,
    application_id: str,
    budget: Budget,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> int:
    """Drain or cancel the application's runs, stop it, and wait until it is STOPPED (or gone); the
    number of runs canceled."""
    canceled = 0
    while (state := application_state(client, application_id)) not in STOPPED:
        runs = unfinished_runs(client, application_id)
        if runs and clock() >= budget.cancel_at:
            canceled += cancel_runs(client, application_id, runs)
        elif not runs and state in RUNNING:
            _unless_moved_on(client.stop_application, applicationId=application_id)
        if clock() >= budget.deadline:
            waiting = f" for {len(runs)} job run(s)" if runs else ""
            raise StillRunningError(f"application {application_id} is still {state}{waiting}; deploy again")
        sleep(POLL_SECONDS)
    return canceled


def application_state(client: Any, application_id: str) -> str:
    """Its state; TERMINATED for one that is gone already."""
    try:
        return str(client.get_application(applicationId=application_id)["application"]["state"])
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return "TERMINATED"
        raise


def unfinished_runs(client: Any, application_id: str) -> list[dict[str, Any]]:
    pages = client.get_paginator("list_job_runs").paginate(applicationId=application_id, states=list(UNFINISHED))
    return [dict(run) for page in pages for run in page.get("jobRuns", [])]


def cancel_runs(client: Any, application_id: str, runs: list[dict[str, Any]]) -> int:
    """Cancel the runs not being canceled already; how many were."""
    pending = [str(run["id"]) for run in runs if run.get("state") != "CANCELLING"]
    for job_run_id in pending:
        _unless_moved_on(client.cancel_job_run, applicationId=application_id, jobRunId=job_run_id)
    return len(pending)


def _unless_moved_on(call: Callable[..., Any], **arguments: Any) -> None:
    """The call, or nothing if AWS refused it because the run or the application moved on."""
    try:
        call(**arguments)
    except ClientError as error:
        if error.response["Error"]["Code"] not in MOVED_ON:
            raise
