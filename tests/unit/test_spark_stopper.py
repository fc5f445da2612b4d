"""The guard's and the after resource's handler (`asya_spark.stopper`, `asya_spark.draining`) against
EMR Serverless as AWS answers: a botocore Stubber gives every answer in order, with the real error
shapes (moto's `stop_application` stops an application whatever runs on it, and its CloudFormation
never deletes one, so neither refusal below can be shown there).

- an update lets running jobs finish, then stops the application; one still running near the end of
  the handler's time is canceled; a stop refused because a job started meanwhile is tried again;
- a deletion cancels every unfinished run at once (every page of them), stops the application and
  waits until it is STOPPED, so `DeleteApplication` finds it stopped;
- the guard holds the actor's job starts in the batches table, the after resource lifts the hold.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from asya_local.functions.lambda_shapes import REGION
from asya_local.testing.tables import SPARK_BATCHES, create_spark_batches_table
from asya_spark import draining, stopper
from asya_spark.draining import UNFINISHED, StillRunningError
from asya_spark.ledger import BatchLedger

NAME = "asya-ns-clean"
APP = "00fabcdef123"
ARN = f"arn:aws:emr-serverless:{REGION}:123456789012:/applications/{APP}"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
STILL_RUNNING = (
    "Application must be in one of the following statuses [STARTING, STARTED] and all scheduled and running "
    "jobs must be completed or cancelled before stopping an application"
)


class Clock:
    """A clock each sleep moves on by the time slept."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Emr:
    """A real EMR Serverless client whose every answer is stubbed, in the order the handler must ask."""

    def __init__(self) -> None:
        self.client = boto3.client(
            "emr-serverless", region_name=REGION, aws_access_key_id="test", aws_secret_access_key="test"
        )
        self.stub = Stubber(self.client)

    def listed(self, state: str = "STARTED") -> Emr:
        application = {
            "id": APP,
            "name": NAME,
            "arn": ARN,
            "releaseLabel": "emr-7.12.0",
            "type": "SPARK",
            "state": state,
            "createdAt": NOW,
            "updatedAt": NOW,
        }
        self.stub.add_response("list_applications", {"applications": [application]}, {})
        return self

    def state(self, state: str) -> Emr:
        application = {
            "applicationId": APP,
            "arn": ARN,
            "releaseLabel": "emr-7.12.0",
            "type": "SPARK",
            "state": state,
            "createdAt": NOW,
            "updatedAt": NOW,
        }
        self.stub.add_response("get_application", {"application": application}, {"applicationId": APP})
        return self

    def runs(self, *states: str, token: str | None = None, next_token: str | None = None) -> Emr:
        """One page of the application's unfinished runs, `run-<n>` in the given states."""
        runs = [
            {
                "applicationId": APP,
                "id": f"run-{n}",
                "arn": f"{ARN}/jobruns/run-{n}",
                "createdBy": "arn:aws:iam::123456789012:role/dispatcher",
                "createdAt": NOW,
                "updatedAt": NOW,
                "executionRole": "arn:aws:iam::123456789012:role/job",
                "state": state,
                "stateDetails": state.lower(),
                "releaseLabel": "emr-7.12.0",
            }
            for n, state in enumerate(states, start=1 if token is None else 10)
        ]
        expected: dict[str, Any] = {"applicationId": APP, "states": list(UNFINISHED)}
        if token is not None:
            expected["nextToken"] = token
        self.stub.add_response(
            "list_job_runs", {"jobRuns": runs} | ({"nextToken": next_token} if next_token else {}), expected
        )
        return self

    def stop(self, refused: bool = False) -> Emr:
        if refused:
            self.stub.add_client_error(
                "stop_application", "ValidationException", STILL_RUNNING, 400, expected_params={"applicationId": APP}
            )
        else:
            self.stub.add_response("stop_application", {}, {"applicationId": APP})
        return self

    def cancel(self, job_run_id: str) -> Emr:
        self.stub.add_response(
            "cancel_job_run",
            {"applicationId": APP, "jobRunId": job_run_id},
            {"applicationId": APP, "jobRunId": job_run_id},
        )
        return self

    def gone(self) -> Emr:
        self.stub.add_client_error(
            "get_application", "ResourceNotFoundException", f"Application {APP} does not exist", 404
        )
        return self


def test_an_update_lets_the_running_job_finish_before_it_stops_the_application() -> None:
    emr = Emr().listed().state("STARTED").runs("RUNNING").state("STARTED").runs().stop().state("STOPPED")
    clock = Clock()
    with emr.stub:
        assert stopper.stop_for_update(emr.client, NAME, 600, clock=clock, sleep=clock.sleep) == APP
    emr.stub.assert_no_pending_responses()  # and nothing was canceled


def test_a_stop_refused_because_a_job_started_meanwhile_is_tried_again() -> None:
    """StopApplication answers ValidationException while a job is scheduled or running: the guard does
    not fail the deploy on it, it waits for that job too and stops the application after."""
    emr = Emr().listed().state("STARTED").runs().stop(refused=True)
    emr.state("STARTED").runs("SCHEDULED").state("STARTED").runs().stop().state("STOPPING").runs().state("STOPPED")
    clock = Clock()
    with emr.stub:
        assert stopper.stop_for_update(emr.client, NAME, 600, clock=clock, sleep=clock.sleep) == APP
    emr.stub.assert_no_pending_responses()


def test_jobs_still_running_near_the_end_of_the_updates_time_are_canceled() -> None:
    """An update drains until `CANCEL_RESERVE_SECONDS` before its deadline, then cancels what still runs
    (a run being canceled already is left to end); its envelopes meet the actor's resiliency policy."""
    seconds = stopper.CANCEL_RESERVE_SECONDS + 10  # two polls of draining
    emr = Emr().listed().state("STARTED").runs("RUNNING", "PENDING").state("STARTED").runs("RUNNING", "PENDING")
    emr.state("STARTED").runs("RUNNING", "CANCELLING").cancel("run-1")
    emr.state("STARTED").runs().stop().state("STOPPED")
    clock = Clock()
    with emr.stub:
        stopper.stop_for_update(emr.client, NAME, seconds, clock=clock, sleep=clock.sleep)
    emr.stub.assert_no_pending_responses()


def test_an_application_that_does_not_stop_in_time_fails_the_update() -> None:
    emr = Emr().listed().state("STARTED").runs().stop()
    for _ in range(6):  # 30 s at one poll every 5 s
        emr.state("STOPPING").runs()
    clock = Clock()
    with emr.stub, pytest.raises(StillRunningError, match=f"application {APP} is still STOPPING; deploy again"):
        stopper.stop_for_update(emr.client, NAME, 25, clock=clock, sleep=clock.sleep)


def test_no_application_of_that_name_is_nothing_to_stop() -> None:
    emr = Emr()
    emr.stub.add_response("list_applications", {"applications": []}, {})
    with emr.stub:
        assert stopper.stop_for_update(emr.client, NAME, 60) is None


def test_a_deletion_cancels_every_unfinished_run_at_once_and_waits_for_stopped() -> None:
    """DeleteApplication needs CREATED or STOPPED. The runs come on two pages; all are canceled at once
    (the actor's queue and functions are being deleted too), then the application is stopped."""
    emr = Emr().state("STARTED").runs("RUNNING", next_token="page-2").runs("QUEUED", token="page-2")
    emr.cancel("run-1").cancel("run-10")
    emr.state("STARTED").runs("CANCELLING").state("STARTED").runs().stop().state("STOPPING").runs().state("STOPPED")
    clock = Clock()
    with emr.stub:
        assert stopper.stop_for_deletion(emr.client, APP, 600, clock=clock, sleep=clock.sleep) == 2
    emr.stub.assert_no_pending_responses()


@pytest.mark.parametrize("state", ["gone", "CREATED", "STOPPED"])
def test_a_deletion_of_an_application_at_rest_or_gone_does_nothing_more(state: str) -> None:
    emr = Emr()
    emr.gone() if state == "gone" else emr.state(state)
    with emr.stub:
        assert stopper.stop_for_deletion(emr.client, APP, 60) == 0


@pytest.fixture
def batches() -> Iterator[BatchLedger]:
    with mock_aws():
        create_spark_batches_table(boto3.client("dynamodb", region_name=REGION))
        yield BatchLedger(SPARK_BATCHES, "ns", "clean")


def event(resource_type: str, request: str) -> dict[str, Any]:
    properties = {"BatchesTable": SPARK_BATCHES, "Namespace": "ns", "Actor": "clean", "Settings": "{}"}
    if resource_type == stopper.GUARD_TYPE:
        properties["ApplicationName"] = NAME
    else:
        properties["ApplicationId"] = APP
    return {"RequestType": request, "ResourceType": resource_type, "ResourceProperties": properties}


def invoke(monkeypatch: pytest.MonkeyPatch, emr: Emr, body: dict[str, Any]) -> dict[str, Any]:
    """The handler as the provider calls it, with the stubbed client and no waiting between polls."""
    monkeypatch.setattr(stopper, "emr_client", lambda: emr.client)
    monkeypatch.setattr(draining, "POLL_SECONDS", 0.0)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 840_000)
    with emr.stub:
        answer = stopper.on_event(body, context)
    emr.stub.assert_no_pending_responses()
    return answer


def test_the_guard_holds_job_starts_and_the_after_resource_lifts_the_hold(
    batches: BatchLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the guard's stop and the application's update, a job start (auto start) would start the
    application again and EMR Serverless would refuse the update: starts wait until the update is done."""
    emr = Emr().listed().state("STARTED").runs().stop().state("STOPPED")
    answer = invoke(monkeypatch, emr, event(stopper.GUARD_TYPE, "Update"))
    assert answer == {"PhysicalResourceId": f"stopped-for-updates-{NAME}"}
    assert batches.held(APP)
    invoke(monkeypatch, Emr(), event(stopper.AFTER_TYPE, "Update"))  # after the application's update
    assert not batches.held(APP)


def test_the_after_resource_stops_the_application_before_it_is_deleted(
    batches: BatchLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    emr = Emr().state("STARTED").runs("RUNNING").cancel("run-1").state("STARTED").runs().stop().state("STOPPED")
    answer = invoke(monkeypatch, emr, event(stopper.AFTER_TYPE, "Delete"))
    assert answer == {"PhysicalResourceId": f"stopped-for-deletion-{APP}"}
    assert batches.held(APP), "no job starts the application again while CloudFormation deletes it"


def test_an_after_resource_created_after_a_guards_update_lifts_its_hold(
    batches: BatchLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first deploy with holds updates every guard (it gains the hold's properties) and creates the
    after resources: their creation, not a later update, ends the hold."""
    batches.hold(APP, time.time() + 600)
    invoke(monkeypatch, Emr(), event(stopper.AFTER_TYPE, "Create"))
    assert not batches.held(APP)


@pytest.mark.parametrize("request_type", ["Create", "Delete"])
def test_nothing_else_stops_or_holds_anything(
    request_type: str, batches: BatchLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke(monkeypatch, Emr(), event(stopper.GUARD_TYPE, request_type))  # any call to EMR Serverless would fail
    assert not batches.held(APP)


def test_a_hold_nobody_lifts_lapses(batches: BatchLedger) -> None:
    batches.hold(APP, time.time() - 1)
    assert not batches.held(APP)
