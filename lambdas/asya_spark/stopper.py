"""Stopping a Spark actor's EMR Serverless application before CloudFormation updates or deletes it.

EMR Serverless refuses `UpdateApplication` and `DeleteApplication` while an application is STARTED, and
one stays STARTED for its idle timeout after every job (all the time under steady traffic), so a
changed `spark:` setting would roll `cdk deploy` back, and `cdk destroy` (or a deploy that drops a
Spark actor) would end in DELETE_FAILED. Two custom resources per application (`asya_cdk.spark_updates`)
call this one handler, and CloudFormation's ordering puts each where it is needed:

- the **guard** (`Custom::AsyaApplicationGuard`), which the application depends on, is updated
  *before* it when its settings change: it holds the actor's job starts (`BatchLedger.hold`), lets
  the running jobs finish (cancels those still unfinished four minutes before its time runs out), stops
  the application and waits until it is STOPPED;
- the **after** resource (`Custom::AsyaApplicationAfter`), which depends on the application, is
  updated *after* it (its properties carry the same settings) and lifts the hold (on create too: the
  deploy that adds it may follow a guard's update, as the first deploy with holds does); and, since
  CloudFormation deletes a resource before what it depends on, it is deleted *before* the application:
  it holds the starts, cancels every unfinished run at once (the actor's queue and functions go too),
  stops the application and waits until it is STOPPED.

A hold whose lifter never runs (the deploy failed and rolled back) lapses by itself ten minutes after
the guard's time. Nothing is stopped on create, nor for an application that is not running.

The guard finds the application by its name (`asya-<ns>-<actor>`), not its id: it comes before the
application and must not refer to it. The after resource refers to it by id.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3

from asya_spark.draining import Budget, stop_application
from asya_spark.ledger import BatchLedger

GUARD_TYPE = "Custom::AsyaApplicationGuard"
AFTER_TYPE = "Custom::AsyaApplicationAfter"
MARGIN_SECONDS = 30.0  # kept back from the invocation's time, to answer CloudFormation
CANCEL_RESERVE_SECONDS = 240.0  # an update drains until this long before its deadline, then cancels
HOLD_AFTER_SECONDS = 600.0  # how long past the guard's deadline a hold nobody lifted still stands


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The custom resource provider's `onEvent`, for both resource types."""
    properties = event["ResourceProperties"]
    request, seconds = event["RequestType"], context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS
    ledger = _ledger(properties)
    if event["ResourceType"] == AFTER_TYPE:
        application_id = str(properties["ApplicationId"])
        if request == "Delete":
            _hold(ledger, application_id, seconds)
            stop_for_deletion(emr_client(), application_id, seconds)
        elif ledger is not None:  # created or updated after the application: a guard's hold is over
            ledger.lift()
        return {"PhysicalResourceId": f"stopped-for-deletion-{application_id}"}
    name = str(properties["ApplicationName"])
    if request == "Update":
        client = emr_client()
        application = find_application(client, name)
        if application is not None:  # none yet: nothing runs to hold or stop
            _hold(ledger, str(application["id"]), seconds)
            drain_and_stop(client, str(application["id"]), seconds)
    return {"PhysicalResourceId": event.get("PhysicalResourceId") or f"stopped-for-updates-{name}"}


def emr_client() -> Any:
    """A client made per event: the provider calls the handler rarely, and one event may stop for minutes."""
    return boto3.client("emr-serverless")


def stop_for_update(
    client: Any,
    name: str,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Stop the application called `name` if it runs, letting its jobs finish for all but the last
    `CANCEL_RESERVE_SECONDS` of `seconds`, and wait until it has stopped; its id, or None when there is
    no such application (not created yet)."""
    application = find_application(client, name)
    if application is None:
        return None
    application_id = str(application["id"])
    drain_and_stop(client, application_id, seconds, clock, sleep)
    return application_id


def drain_and_stop(
    client: Any,
    application_id: str,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Stop the application, letting its jobs finish for all but the last `CANCEL_RESERVE_SECONDS` of
    `seconds`, and wait until it has stopped."""
    now = clock()
    budget = Budget(cancel_at=now + max(0.0, seconds - CANCEL_RESERVE_SECONDS), deadline=now + seconds)
    stop_application(client, application_id, budget, clock, sleep)


def stop_for_deletion(
    client: Any,
    application_id: str,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Cancel the application's unfinished runs, stop it and wait until it has stopped (or is gone);
    how many runs were canceled."""
    now = clock()
    return stop_application(client, application_id, Budget(cancel_at=now, deadline=now + seconds), clock, sleep)


def find_application(client: Any, name: str) -> dict[str, Any] | None:
    for page in client.get_paginator("list_applications").paginate():
        for application in page.get("applications", []):
            if application.get("name") == name and application.get("state") != "TERMINATED":
                return dict(application)
    return None


def _hold(ledger: BatchLedger | None, application_id: str, seconds: float) -> None:
    if ledger is not None:
        ledger.hold(application_id, time.time() + seconds + HOLD_AFTER_SECONDS)


def _ledger(properties: dict[str, Any]) -> BatchLedger | None:
    """Where the actor's start hold is kept; None for a resource made before holds (its first update
    gives it the properties)."""
    if "BatchesTable" not in properties:
        return None
    return BatchLedger(str(properties["BatchesTable"]), str(properties["Namespace"]), str(properties["Actor"]))
