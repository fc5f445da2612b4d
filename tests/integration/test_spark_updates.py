"""EMR Serverless as the local endpoint runs it (`asya_local.endpoint.moto_emr`; moto alone calls a job
run SUCCESS the moment it starts, and runs nothing). A start repeated with its client token returns its
run, and a new run goes to the local Spark runner. A Spark actor's application updated while it runs:
the local endpoint refuses the update of a STARTED application, as EMR Serverless does, and the
guard's handler (`asya_spark.stopper`), which CloudFormation runs before the update, stops it so the
update goes through."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya_local.endpoint.process import LocalEndpoint
from asya_local.roles import local_client
from asya_spark.stopper import stop_for_update

pytestmark = pytest.mark.integration

NO_ROLE = "arn:aws:iam::123456789012:role/none"  # a role the runner cannot take: its runs fail at once


def ended(emr: Any, application: str, job_run_id: str, seconds: float = 30.0) -> dict[str, Any]:
    """The job run once it has ended."""
    deadline = time.monotonic() + seconds
    while (run := emr.get_job_run(applicationId=application, jobRunId=job_run_id)["jobRun"])["state"] not in (
        "SUCCESS",
        "FAILED",
        "CANCELLED",
    ):
        assert time.monotonic() < deadline, run
        time.sleep(0.2)
    found: dict[str, Any] = run
    return found


def test_a_start_repeated_with_its_client_token_returns_its_run_which_the_runner_runs(endpoint: LocalEndpoint) -> None:
    emr = local_client("emr-serverless", endpoint.url)
    name = f"asya-tok-{uuid.uuid4().hex[:6]}"
    application = emr.create_application(name=name, releaseLabel="emr-7.12.0", type="SPARK")["applicationId"]
    start: Any = {
        "applicationId": application,
        "executionRoleArn": NO_ROLE,
        "jobDriver": {"sparkSubmit": {"entryPoint": "s3://nowhere/entry.py"}},
        "clientToken": uuid.uuid4().hex,
    }
    first, again = emr.start_job_run(**start), emr.start_job_run(**start)
    assert again["jobRunId"] == first["jobRunId"]
    run = ended(emr, application, first["jobRunId"])
    assert (run["state"], run["stateDetails"].split(":")[0]) == ("FAILED", "local runner"), run
    [listed] = emr.list_job_runs(applicationId=application)["jobRuns"]
    assert listed["id"] == first["jobRunId"]


def test_an_application_a_job_started_is_stopped_before_its_update(endpoint: LocalEndpoint) -> None:
    emr = local_client("emr-serverless", endpoint.url)
    name = f"asya-upd-{uuid.uuid4().hex[:6]}"
    application = emr.create_application(name=name, releaseLabel="emr-7.12.0", type="SPARK")["applicationId"]
    assert stop_for_update(emr, name, 5) == application, "a CREATED application is left as it is"
    emr.start_job_run(
        applicationId=application,
        executionRoleArn=NO_ROLE,
        jobDriver={"sparkSubmit": {"entryPoint": "s3://nowhere/entry.py"}},
        clientToken=uuid.uuid4().hex,
    )
    assert emr.get_application(applicationId=application)["application"]["state"] == "STARTED"
    with pytest.raises(ClientError) as refused:
        emr.update_application(applicationId=application, maximumCapacity={"cpu": "8 vCPU", "memory": "32 GB"})
    assert "Current status: STARTED" in str(refused.value)
    assert stop_for_update(emr, name, 30, sleep=lambda _seconds: None) == application
    assert emr.get_application(applicationId=application)["application"]["state"] == "STOPPED"
    emr.update_application(applicationId=application, maximumCapacity={"cpu": "8 vCPU", "memory": "32 GB"})
    assert stop_for_update(emr, "asya-upd-none", 5) is None, "no application of that name yet: nothing to do"
