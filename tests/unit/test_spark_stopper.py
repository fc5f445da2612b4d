"""The guard's handler: on an update it stops a running application and waits for it to stop, in the
time its invocation has; on create and delete it does nothing."""

from __future__ import annotations

from typing import Any

import pytest

from asya_spark import stopper


class Applications:
    """EMR Serverless as the handler sees it: one application whose state moves on each read after a stop."""

    def __init__(self, states: list[str]) -> None:
        self.states = states
        self.stopped = 0

    def get_paginator(self, _name: str) -> Any:
        return self

    def paginate(self) -> list[dict[str, Any]]:
        return [{"applications": [{"id": "app-1", "name": "asya-ns-clean", "state": self.states[0]}]}]

    def get_application(self, applicationId: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"application": {"applicationId": applicationId, "state": state}}

    def stop_application(self, applicationId: str) -> None:  # noqa: N803 - boto3's name
        self.stopped += 1


def test_a_started_application_is_stopped_and_waited_for() -> None:
    client = Applications(["STARTED", "STOPPING", "STOPPING", "STOPPED"])
    assert stopper.stop_for_update(client, "asya-ns-clean", 60, sleep=lambda _s: None) == "app-1"
    assert client.stopped == 1


def test_an_application_that_does_not_stop_in_time_fails_the_update() -> None:
    client = Applications(["STARTED", "STOPPING"])
    clock = iter(range(0, 1000, 10))
    with pytest.raises(stopper.StillRunningError, match=r"asya-ns-clean .* is still STOPPING; deploy again"):
        stopper.stop_for_update(client, "asya-ns-clean", 30, clock=lambda: float(next(clock)), sleep=lambda _s: None)


@pytest.mark.parametrize("request_type", ["Create", "Delete"])
def test_only_an_update_stops_anything(request_type: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stopper, "stop_for_update", lambda *_a, **_k: pytest.fail("stopped on " + request_type))
    event = {"RequestType": request_type, "ResourceProperties": {"ApplicationName": "asya-ns-clean"}}
    assert stopper.on_event(event, None) == {"PhysicalResourceId": "stopped-for-updates-asya-ns-clean"}
