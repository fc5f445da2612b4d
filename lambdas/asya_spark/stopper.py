"""Stopping a Spark actor's EMR Serverless application before CloudFormation updates it.

EMR Serverless refuses `UpdateApplication` while an application is STARTED, and one stays STARTED for
its idle timeout after every job (all the time under steady traffic), so a changed `spark:` setting
would roll `cdk deploy` back. Each application therefore depends on a custom resource of its own
(`asya_cdk.spark_updates`) whose properties are the application's settings: when they change,
CloudFormation updates the custom resource first, and this handler stops the application and waits
until it is STOPPED; CloudFormation then updates it, and the next job starts it again (auto start).
Nothing is done on create or delete, or for an application that is not running.

The application is found by its name (`asya-<ns>-<actor>`), not its id: the custom resource must not
refer to the application it comes before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3

RUNNING = ("STARTING", "STARTED")
STOPPED = ("CREATED", "STOPPED")
POLL_SECONDS = 5.0
MARGIN_SECONDS = 30.0  # kept back from the invocation's time, to answer CloudFormation


class StillRunningError(RuntimeError):
    """The application did not stop in the time the invocation had; the update fails, as it would."""


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The custom resource provider's `onEvent`: on update, the application stopped."""
    name = str(event["ResourceProperties"]["ApplicationName"])
    if event["RequestType"] == "Update":
        seconds = context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS
        stop_for_update(boto3.client("emr-serverless"), name, seconds)
    return {"PhysicalResourceId": event.get("PhysicalResourceId") or f"stopped-for-updates-{name}"}


def stop_for_update(
    client: Any,
    name: str,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Stop the application called `name` if it runs, and wait until it has stopped; its id, or None
    when there is no such application (not created yet)."""
    application = find_application(client, name)
    if application is None:
        return None
    application_id = str(application["id"])
    deadline = clock() + seconds
    state = client.get_application(applicationId=application_id)["application"]["state"]
    if state in RUNNING:
        client.stop_application(applicationId=application_id)
    while state not in STOPPED:
        if clock() >= deadline:
            raise StillRunningError(f"application {name} ({application_id}) is still {state}; deploy again")
        sleep(POLL_SECONDS)
        state = client.get_application(applicationId=application_id)["application"]["state"]
    return application_id


def find_application(client: Any, name: str) -> dict[str, Any] | None:
    for page in client.get_paginator("list_applications").paginate():
        for application in page.get("applications", []):
            if application.get("name") == name and application.get("state") != "TERMINATED":
                return dict(application)
    return None
