"""The local clock of a schedule rule: the scheduled event (or the target's input), runs at the
configured interval, a failing run not ending the schedule, results printed when they change."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from asya_local.functions.scheduler import Scheduler

RULE = "arn:aws:events:us-east-1:123456789012:rule/asya-t-gateway-backstop"


def scheduler(handler: Any, interval: float = 0.05, target_input: str | None = None) -> Scheduler:
    spec = {
        "function": "asya-t-gateway-backstop",
        "timeout": 60.0,
        "memory": 256,
        "rule_arn": RULE,
        "expression": "rate(1 minute)",
        "input": target_input,
        "interval": interval,
    }
    return Scheduler(spec, handler)


def test_the_function_gets_the_scheduled_event() -> None:
    events: list[Any] = []
    scheduler(lambda event, _context: events.append(event)).fire()
    (event,) = events
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["resources"] == [RULE]


def test_a_target_input_replaces_the_event() -> None:
    events: list[Any] = []
    scheduler(lambda event, _context: events.append(event), target_input='{"sweep": true}').fire()
    assert events == [{"sweep": True}]


def test_runs_come_at_the_interval_and_survive_a_failing_run(capsys: pytest.CaptureFixture[str]) -> None:
    runs: list[float] = []

    def handler(_event: Any, _context: Any) -> dict[str, int]:
        runs.append(time.monotonic())
        if len(runs) == 2:
            raise RuntimeError("one bad run")
        return {"expired": 0}

    clock = scheduler(handler)
    thread = threading.Thread(target=clock.run)
    thread.start()
    time.sleep(0.4)
    clock.stop()
    thread.join(2)
    assert not thread.is_alive()
    assert len(runs) >= 4
    printed = capsys.readouterr().out
    assert "RuntimeError: one bad run" in printed
    assert printed.count('{"expired": 0}') == 1, "an unchanged result is printed once"
