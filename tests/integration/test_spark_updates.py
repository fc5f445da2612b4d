"""A Spark actor's application updated while it runs: the local endpoint refuses the update of a
STARTED application, as EMR Serverless does, and the guard's handler (`asya_spark.stopper`), which
CloudFormation runs before the update, stops it so the update goes through."""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from asya_local.roles import local_client
from asya_local.stack import LocalEndpoint
from asya_spark.stopper import stop_for_update

pytestmark = pytest.mark.integration


def test_an_application_a_job_started_is_stopped_before_its_update(endpoint: LocalEndpoint) -> None:
    emr = local_client("emr-serverless", endpoint.url)
    name = f"asya-upd-{uuid.uuid4().hex[:6]}"
    application = emr.create_application(name=name, releaseLabel="emr-7.12.0", type="SPARK")["applicationId"]
    assert stop_for_update(emr, name, 5) == application, "a CREATED application is left as it is"
    emr.start_job_run(
        applicationId=application,
        executionRoleArn="arn:aws:iam::123456789012:role/none",
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
