"""A task's log lines: read from the end of the local worker log, bounded, or asked of CloudWatch Logs
Insights; and shown on the task's page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
from botocore.stub import ANY, Stubber
from flask.testing import FlaskClient

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.task_logs import CloudWatchTaskLogs, FoundLines, LocalTaskLogs, LogLine
from asya_local.console.topology import Topology
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats

TASK = "5f0c9a2e-0000-4000-8000-000000000001"
BRANCH = "7a1b2c3d-0000-4000-8000-000000000002"


def record(message: str, envelope_id: str, level: str = "INFO") -> str:
    return json.dumps({"level": level, "message": message, "task_id": TASK, "envelope_id": envelope_id})


def write_log(path: Path, lines: list[tuple[str, str]]) -> None:
    path.write_text(
        "".join(f"2026-11-27T10:00:0{i}.000+00:00 {source} | {text}\n" for i, (source, text) in enumerate(lines))
    )


def test_the_local_log_gives_the_tasks_lines_and_its_branches_oldest_first(tmp_path: Path) -> None:
    log = tmp_path / "mesh.log"
    write_log(
        log,
        [
            ("asya-n-split", record("splitting 3 reviews", TASK)),
            ("asya-n-other", record("someone else's", "e9").replace(TASK, "another-task")),
            ("asya-n-score", record("scoring a branch", BRANCH, "WARNING")),
            ("asya-n-score", '{"_aws": {"CloudWatchMetrics": []}, "MessagesReceived": 1}'),
            ("asya-n-gateway", f"GET /api/v1/mesh/{TASK} 200 (6 ms)"),  # mentions it, is not its record
            ("asya-n-x-sump", json.dumps({"level": "ERROR", "message": "reached x-sump", "correlation_id": TASK})),
        ],
    )
    found = LocalTaskLogs(log).lines({"id": TASK})
    assert [(line.source, line.message, line.level, line.envelope_id) for line in found.lines] == [
        ("asya-n-split", "splitting 3 reviews", "INFO", TASK),
        ("asya-n-score", "scoring a branch", "WARNING", BRANCH),
        ("asya-n-x-sump", "reached x-sump", "ERROR", TASK),
    ]
    assert found.lines[0].at == "2026-11-27T10:00:00.000+00:00"
    assert found.note == ""


def test_a_failures_line_says_the_error_it_names(tmp_path: Path) -> None:
    """A failure's record carries what failed as fields; its line in the task's log says it."""
    log = tmp_path / "mesh.log"
    failed = {"error_type": "ValueError", "error_message": "review 2 has no text", "reason": "HandlerError"}
    write_log(
        log,
        [
            ("asya-n-score", json.dumps({**json.loads(record("handler failed", BRANCH, "WARNING")), **failed})),
            ("asya-n-x-sump", json.dumps({**json.loads(record("refused", TASK)), "error": "not from the mesh"})),
        ],
    )
    assert [line.message for line in LocalTaskLogs(log).lines({"id": TASK}).lines] == [
        "handler failed: ValueError: review 2 has no text",
        "refused: not from the mesh",
    ]


def test_only_the_end_of_a_large_log_is_read_and_only_the_newest_lines_are_shown(tmp_path: Path) -> None:
    log = tmp_path / "mesh.log"
    write_log(log, [("asya-n-a", record(f"line {n}", TASK)) for n in range(9)])
    tail = LocalTaskLogs(log, tail_bytes=400).lines({"id": TASK})
    assert [line.message for line in tail.lines] == ["line 7", "line 8"]  # a cut first line is dropped
    assert tail.where.startswith("the last 400 bytes of the worker log")
    newest = LocalTaskLogs(log, shown=3).lines({"id": TASK})
    assert [line.message for line in newest.lines] == ["line 6", "line 7", "line 8"]
    assert newest.note == "the newest 3 of its 9 lines"
    assert "cannot be read" in LocalTaskLogs(tmp_path / "none.log").lines({"id": TASK}).note


def test_on_aws_the_lines_come_from_a_logs_insights_query_polled_until_complete() -> None:
    logs = boto3.client("logs", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    slept: list[float] = []
    row = [
        {"field": "@timestamp", "value": "2026-11-27 10:00:01.000"},
        {"field": "@log", "value": "123456789012:/aws/lambda/asya-n-score"},
        {"field": "@message", "value": record("scored", BRANCH)},
    ]
    older = [*row[:2], {"field": "@message", "value": record("split", TASK)}]
    with Stubber(logs) as stub:
        stub.add_response(
            "start_query",
            {"queryId": "q-1"},
            {
                "logGroupNames": ["/aws/lambda/asya-n-score", "/aws/lambda/asya-n-split"],
                "startTime": ANY,
                "endTime": ANY,
                "queryString": ANY,
                "limit": 200,
            },
        )
        stub.add_response("get_query_results", {"status": "Running", "results": []}, {"queryId": "q-1"})
        stub.add_response("get_query_results", {"status": "Complete", "results": [row, older]}, {"queryId": "q-1"})
        found = CloudWatchTaskLogs(
            logs, ["/aws/lambda/asya-n-score", "/aws/lambda/asya-n-split"], sleep=slept.append
        ).lines(
            {"id": TASK, "created_at": "2026-11-27T10:00:00Z", "updated_at": "2026-11-27T10:00:05Z", "terminal": True}
        )
        stub.assert_no_pending_responses()
    assert [(line.message, line.source, line.at) for line in found.lines] == [
        ("split", "asya-n-score", "2026-11-27T10:00:01.000Z"),
        ("scored", "asya-n-score", "2026-11-27T10:00:01.000Z"),
    ]
    assert slept == [0.5]
    assert found.note == ""


def test_a_query_never_holds_what_is_not_a_task_id() -> None:
    logs = boto3.client("logs", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    with Stubber(logs):  # any call would fail: none is expected
        assert CloudWatchTaskLogs(logs, ["/aws/lambda/a"]).lines({"id": 'x" or 1=1'}).lines == []


class Lines:
    def lines(self, task: dict[str, Any]) -> FoundLines:
        said = LogLine("2026-11-27T10:00:00.000Z", "asya-n-score", "<scored> 4 reviews", "INFO", BRANCH)
        return FoundLines([said] if task["id"] == "t3" else [], "the worker log x.log")


def test_the_task_page_shows_its_log_lines() -> None:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    console = Console(topology, FixedStats(), FakeGateway(), "here", task_logs=Lines())  # type: ignore[arg-type]
    client: FlaskClient = console_client(console)
    page = client.get("/tasks/t3").get_data(as_text=True)
    assert "from the worker log x.log" in page
    assert "&lt;scored&gt; 4 reviews" in page
    assert f"<code>{BRANCH[:8]}</code>" in page
    assert "No log lines found for this task." in client.get("/tasks/t1").get_data(as_text=True)


class AskedLogs:
    """A Logs client that keeps the query it is asked and answers it at once, with nothing found."""

    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    def start_query(self, **asked: Any) -> dict[str, str]:
        self.asked = asked
        return {"queryId": "q-1"}

    def get_query_results(self, queryId: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        return {"status": "Complete", "results": []}


def test_a_long_task_is_searched_over_its_newest_day_and_the_page_says_what_was_left_out() -> None:
    """Logs Insights bills each GB a query scans (H14): a task open for a month is searched over its
    newest day, and groups past the query's 50 are named as not searched."""
    logs = AskedLogs()
    groups = [f"/aws/lambda/asya-n-a{number:02d}" for number in range(52)]
    task = {"id": TASK, "created_at": "2026-10-01T00:00:00Z", "updated_at": "2026-11-01T00:00:00Z", "terminal": True}
    found = CloudWatchTaskLogs(logs, groups).lines(task)
    assert logs.asked["logGroupNames"] == groups[:50]
    assert logs.asked["endTime"] - logs.asked["startTime"] == 86_400
    assert found.note == (
        "only the task's newest 24 hours are searched; 2 log groups past Logs Insights' 50 are not searched"
    )
