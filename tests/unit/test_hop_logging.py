"""Every log record made while a hop runs names its envelope, its task and its actor, the handler's own
`logging` calls included; records made outside a hop name none."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from asya.headers import ROOT_HEADER
from asya.hop_logging import SDK_LOGGERS
from asya_local.functions.runtime_logging import LambdaJsonFormatter, install_root_handler
from tests.support.mesh import Mesh, envelope


def handler_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "tests.handler"]


def test_a_handlers_log_record_names_its_hop(mesh: Mesh, caplog: pytest.LogCaptureFixture) -> None:
    mesh.actor("logs", actor="a")
    with caplog.at_level(logging.INFO):
        mesh.deliver(envelope({"text": "kettle"}, id="task-1"))
    [record] = handler_records(caplog)
    assert record.getMessage() == "scoring kettle"
    assert (record.envelope_id, record.task_id, record.actor) == ("task-1", "task-1", "a")  # type: ignore[attr-defined]
    assert mesh.only("b")["payload"] == {"text": "kettle"}
    logging.getLogger("tests.handler").warning("between hops")
    assert not hasattr(caplog.records[-1], "task_id")


def test_a_branchs_record_names_its_task(mesh: Mesh, caplog: pytest.LogCaptureFixture) -> None:
    mesh.actor("logs", actor="a")
    with caplog.at_level(logging.INFO):
        mesh.deliver(envelope(id="branch-2", parent_id="task-1", headers={ROOT_HEADER: "task-1"}))
    [record] = handler_records(caplog)
    assert (record.envelope_id, record.task_id) == ("branch-2", "task-1")  # type: ignore[attr-defined]


def test_a_handlers_line_in_the_runtimes_json_carries_the_names(mesh: Mesh) -> None:
    """As Lambda's runtime writes a record with the JSON log format, so does a local environment
    (`asya_local.functions.runtime_logging`): the hop's names are fields of the line."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(LambdaJsonFormatter())
    logging.getLogger().addHandler(handler)
    try:
        mesh.actor("logs", actor="a")
        mesh.deliver(envelope({"text": "pot"}, id="task-3"))
    finally:
        logging.getLogger().removeHandler(handler)
    lines = [json.loads(line) for line in written.getvalue().splitlines()]
    [line] = [line for line in lines if line["logger"] == "tests.handler"]
    assert line["message"] == "scoring pot"
    assert line["level"] == "WARNING"
    assert (line["task_id"], line["envelope_id"], line["actor"]) == ("task-3", "task-3", "a")


def test_the_runtimes_json_has_the_error_and_the_level_is_the_functions() -> None:
    try:
        raise ValueError("no such review")
    except ValueError:
        record = logging.getLogger("h").makeRecord("h", logging.ERROR, "f", 1, "failed", (), sys.exc_info())
    line = json.loads(LambdaJsonFormatter().format(record))
    assert (line["errorType"], line["errorMessage"]) == ("ValueError", "no such review")
    assert line["timestamp"].endswith("Z")
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        installed = install_root_handler({"AWS_LAMBDA_LOG_LEVEL": "WARN"})
        assert root.level == logging.WARNING
        assert install_root_handler({}) is installed, "once per process"
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.fixture
def sdk_levels() -> Iterator[None]:
    """The SDK's loggers as a fresh execution environment has them (no level of their own), and as
    they were again after the test."""
    loggers = [logging.getLogger(name) for name in SDK_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.NOTSET)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _task_lines(mesh: Mesh, task_id: str) -> list[dict[str, Any]]:
    """The JSON lines the runtime writes at its default level (INFO) during a hop that names `task_id`."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(LambdaJsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        mesh.deliver(envelope({"text": "kettle"}, id=task_id))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    lines = [json.loads(line) for line in written.getvalue().splitlines()]
    return [line for line in lines if line.get("task_id") == task_id]


@pytest.mark.usefixtures("sdk_levels")
def test_a_tasks_lines_have_the_handlers_info_and_not_the_sdks(mesh: Mesh, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the task's page shows: the handler's own INFO line, not botocore's "Found endpoint for sqs
    via: environment_global." that every client made during a hop logged."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")  # as on the local stack
    mesh.actor("logs_and_calls_aws", actor="a")
    lines = _task_lines(mesh, "task-4")
    assert [line["message"] for line in lines if line["logger"] == "tests.handler"] == ["scoring kettle"]
    assert [line["message"] for line in lines if line["logger"].split(".")[0] in SDK_LOGGERS] == []


@pytest.mark.usefixtures("sdk_levels")
def test_the_sdks_lines_stay_when_the_user_asks_for_them(mesh: Mesh, monkeypatch: pytest.MonkeyPatch) -> None:
    """A level the user set on the SDK's logger, or the function's log level at DEBUG, is theirs."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    logging.getLogger("botocore").setLevel(logging.INFO)
    mesh.actor("logs_and_calls_aws", actor="a")
    assert logging.getLogger("botocore").level == logging.INFO
    assert any(line["logger"].startswith("botocore") for line in _task_lines(mesh, "task-5"))
    logging.getLogger("botocore").setLevel(logging.NOTSET)
    monkeypatch.setenv("AWS_LAMBDA_LOG_LEVEL", "DEBUG")
    mesh.actor("logs_and_calls_aws", actor="a")
    assert logging.getLogger("botocore").level == logging.NOTSET
