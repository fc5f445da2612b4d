"""An actor's history as the console charts it: counted from the worker log's metric lines (the
sidecar's own, stamped at chosen times) and the queues' sampled ages locally, asked of CloudWatch on
AWS (botocore's stubber checks each request against the service's model), and drawn on the actor's
page."""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from flask.testing import FlaskClient

from asya.telemetry import Telemetry
from asya_cdk.loading import load_mesh
from asya_local.console.activity import ActivityCounter
from asya_local.console.app import Console
from asya_local.console.aws_history import AwsHistory
from asya_local.console.history import DAY, HOUR, History, Point
from asya_local.console.local import follow_log
from asya_local.console.topology import Topology
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats
from tests.unit.test_console_deployed import client as aws_client

NOW = 1_800_000_000  # a whole five minutes: 2027-01-15T08:00:00Z


@pytest.fixture(autouse=True)
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)


def batch(
    capsys: pytest.CaptureFixture[str],
    actor: str,
    at: float,
    durations: list[float],
    *,
    failed: int = 0,
    metric: str = "ProcessingDuration",
) -> list[str]:
    """The metric lines an actor's function prints for one batch, stamped `at` (epoch seconds)."""
    telemetry = Telemetry("reviews", actor)
    for duration in durations:
        unit = MetricUnit.Seconds if metric == "SparkJobDuration" else MetricUnit.Milliseconds
        telemetry.observe(metric, unit, duration)
    telemetry.count("MessagesProcessed", "outcome", "forwarded", amount=len(durations) - failed)
    if failed:
        telemetry.count("MessagesProcessed", "outcome", "failed", amount=failed)
        telemetry.count("MessagesFailed", "reason", "HandlerError", amount=failed)
    telemetry.flush()
    lines = []
    for line in capsys.readouterr().out.splitlines():
        document = orjson.loads(line)
        document["_aws"]["Timestamp"] = int(at * 1000)
        lines.append(orjson.dumps(document).decode())
    return lines


def counter_at(now: list[float]) -> ActivityCounter:
    return ActivityCounter("reviews", clock=lambda: now[0])


def test_the_worker_log_is_counted_by_the_minute_with_percentiles(capsys: pytest.CaptureFixture[str]) -> None:
    now: list[float] = [NOW]
    counter = counter_at(now)
    for line in [
        *batch(capsys, "score", NOW - 125, [float(ms) for ms in range(1, 101)], failed=3),  # 08:57:55
        *batch(capsys, "score", NOW - 119, [500.0]),  # 08:58:01
        *batch(capsys, "split", NOW - 10, [2.0, 4.0]),
    ]:
        counter.take(line)
    history = counter.history.history("score", HOUR)
    assert len(history.points) == 60
    assert history.points[-1].start == NOW
    by_start = {point.start: point for point in history.points}
    first = by_start[NOW - 180]
    assert (first.processed, first.failed) == (100, 3)
    assert first.p50 == pytest.approx(50, rel=0.02)
    assert first.p95 == pytest.approx(95, rel=0.02)
    assert by_start[NOW - 120].processed == 1
    assert by_start[NOW - 120].p50 == pytest.approx(500, rel=0.02)
    assert by_start[NOW - 60] == Point(NOW - 60), "a minute with no envelope: no duration, not zero"
    assert (history.processed, history.failed) == (101, 3), "another actor's lines are its own"
    day = counter.history.history("score", DAY)
    assert len(day.points) == 288
    assert (day.points[-2].start, day.points[-2].processed) == (NOW - 300, 101), "both minutes in one bucket"
    assert day.points[-2].p95 == pytest.approx(96, rel=0.03)
    assert counter.activity()["score"].processed == 101, "the mesh page's five minutes, from the same counts"


def test_a_spark_actors_durations_are_its_jobs_in_milliseconds(capsys: pytest.CaptureFixture[str]) -> None:
    counter = counter_at([float(NOW)])
    job = batch(capsys, "crunch", NOW - 30, [42.0], metric="SparkJobDuration")
    failed_hops = batch(capsys, "crunch", NOW - 29, [0.2, 0.3], failed=2)  # its collector failing a job's envelopes
    for line in job + failed_hops:
        counter.take(line)
    assert counter.history.history("crunch", HOUR).points[-2].p50 == pytest.approx(42_000, rel=0.02)


def test_history_is_kept_a_day_and_no_longer(capsys: pytest.CaptureFixture[str]) -> None:
    now: list[float] = [NOW]
    counter = counter_at(now)
    for minute in range(0, 26 * 60, 7):  # a batch every 7 minutes for 26 hours, read as an old log is
        for line in batch(capsys, "score", NOW - 26 * 3600 + minute * 60, [5.0]):
            counter.take(line)
    day = counter.history.history("score", DAY)
    assert day.points[0].start == NOW - 86_400 + 300
    assert day.processed == len(range(0, 26 * 60, 7)) - sum(1 for m in range(0, 26 * 60, 7) if m * 60 < 2 * 3600 + 300)
    assert counter.history.kept() <= 60 + 288, "bounded, whatever came"
    now[0] += 2 * 86_400
    assert counter.history.history("score", DAY).processed == 0, "a day later, nothing is left"
    assert counter.activity() == {}


def test_the_queue_age_is_the_most_sampled_in_each_minute() -> None:
    now: list[float] = [NOW + 5]
    counter = counter_at(now)
    for age in (3.0, 40.0, 7.0):
        counter.history.sample_ages({"score": age, "split": 0.0})
        now[0] += 10
    now[0] = NOW + 65
    counter.history.sample_ages({"score": 1.0})
    points = counter.history.history("score", HOUR).points
    assert [point.age for point in points[-3:]] == [None, 40.0, 1.0], "never sampled: no age"
    assert counter.history.history("score", DAY).points[-1].age == 40.0


def test_a_console_beside_a_running_stack_reads_the_log_from_its_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counter = counter_at([float(NOW)])
    log = tmp_path / "reviews.log"
    before = batch(capsys, "score", NOW - 600, [1.0, 2.0])
    log.write_text("".join(f"2027-01-15T07:50:00.000+00:00 score | {line}\n" for line in before))
    stop = threading.Event()
    follow_log(log, counter.take, stop)
    deadline = time.monotonic() + 5
    while counter.history.history("score", HOUR).processed < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    assert counter.history.history("score", HOUR).processed == 2, "what ran before the console started"


def stamp(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def test_a_deployed_actors_history_is_one_get_metric_data_kept_a_minute() -> None:
    cloudwatch = aws_client("cloudwatch")
    now = [NOW + 30]
    source = AwsHistory(cloudwatch, "shop", spark_actors=["crunch"], clock=lambda: now[0])
    series = {
        "processed0": [12.0, 30.0],
        "failed0": [2.0],
        "p500": [0.5],  # a Spark actor's job duration: seconds
        "p950": [1.5],
        "age0": [90.0, 4.0],
    }
    results = [
        {"Id": key, "Timestamps": [stamp(NOW - 60 * i) for i in range(len(values))][::-1], "Values": values}
        for key, values in series.items()
    ]
    with Stubber(cloudwatch) as stub:
        stub.add_response(
            "get_metric_data",
            {"MetricDataResults": results},
            {
                "MetricDataQueries": source.queries("crunch", 60),
                "StartTime": stamp(NOW - 3540),
                "EndTime": stamp(NOW + 60),
                "ScanBy": "TimestampAscending",
            },
        )
        history = source.history("crunch", HOUR)
        now[0] += 30
        assert source.history("crunch", HOUR) is history, "within a minute: no second call (the stubber refuses one)"
        stub.assert_no_pending_responses()
    last, before = history.points[-1], history.points[-2]
    assert (before.processed, last.processed, last.failed, before.failed) == (12, 30, 2, 0)
    assert (last.p50, last.p95) == (500.0, 1500.0)
    assert (before.age, last.age) == (90.0, 4.0)
    assert history.points[0] == Point(NOW - 3540)
    queries = {query["Id"]: query for query in source.queries("crunch", 300)}
    duration = queries["p950"]["MetricStat"]
    assert duration["Metric"]["MetricName"] == "SparkJobDuration"
    assert duration["Stat"] == "p95"
    assert duration["Metric"]["Dimensions"] == [{"Name": "mesh", "Value": "shop"}, {"Name": "actor", "Value": "crunch"}]
    assert duration["Period"] == 300
    assert "MessagesProcessed" in queries["processed0"]["Expression"]
    lambda_query = {query["Id"]: query for query in source.queries("split", 60)}["p500"]["MetricStat"]
    assert lambda_query["Metric"]["MetricName"] == "ProcessingDuration"


class KnownHistory:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def history(self, actor: str, window: Any) -> History:
        self.asked.append((actor, window.name))
        found = {NOW - 120: Point(NOW - 120, 14, 2, 12.5, 40.0, 3.0), NOW: Point(NOW, 6, 0, 10.0, 20.0, 0.0)}
        return History.of(actor, window, NOW, found)


@pytest.fixture
def history() -> KnownHistory:
    return KnownHistory()


@pytest.fixture
def page(history: KnownHistory) -> FlaskClient:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    console = Console(topology, FixedStats(), FakeGateway(), "here", history=history)  # type: ignore[arg-type]
    return console_client(console)


def test_an_actors_page_charts_its_hour_and_day(page: FlaskClient, history: KnownHistory) -> None:
    shown = page.get("/actors/score").get_data(as_text=True)
    assert history.asked == [("score", "hour")], "the last hour unless asked"
    assert "20 envelopes processed, 2 failed" in shown
    for title in ("Envelopes processed per minute", "Duration, p50 and p95", "Envelopes failed per minute"):
        assert title in shown
    assert "<title>07:58 UTC · 14 processed</title>" in shown
    assert "<title>07:58 UTC · p50 12.5 ms, p95 40 ms</title>" in shown
    assert "<title>07:57 UTC · not measured</title>" in shown
    assert "<title>07:58 UTC · age 3 s</title>" in shown
    start = re.search(r'data-start="(\d+)"><title>07:58 UTC · 14 processed', shown)
    assert start is not None, "each hover's bucket start, for the page's script to show in local time"
    assert stamp(int(start.group(1))).strftime("%H:%M") == "07:58"
    throughput = shown.split('class="chart chart-throughput"')[1].split("</figure>")[0]
    assert len(re.findall(r'<rect class="bar"', throughput)) == 2
    assert len(re.findall(r'<rect class="hit"', throughput)) == 60
    assert '<span class="chart-top" aria-hidden="true">20 processed</span>' in shown, "the scale, 14 rounded up"
    assert '<dd data-stat="visible">7</dd>' in shown, "its figures now"
    assert 'd="M57 ' in shown, "the durations drawn from the bucket measured"
    assert "#" not in re.sub(r"#\w+|&#\d+;", "", shown.split("<svg")[1].split("</svg>")[0]), "no fixed colour"

    day = page.get("/actors/score?span=day").get_data(as_text=True)
    assert history.asked[-1] == ("score", "day")
    assert "Envelopes processed per 5 minutes" in day
    assert "24 h ago" in day
    assert 'aria-current="page">last day</a>' in day
    assert len(re.findall(r'<rect class="hit"', day.split("</figure>")[0])) == 288


def test_an_actors_failed_chart_links_to_its_failed_tasks_and_to_x_sump(page: FlaskClient) -> None:
    shown = page.get("/actors/score").get_data(as_text=True)
    failed = shown.split('class="chart chart-errors"')[1].split("</figure>")[0]
    assert '<a href="/tasks?status=failed&amp;actor=score">its failed tasks</a>' in failed
    assert '<a href="/sump?actor=score">what x-sump kept from it</a>' in failed
    throughput = shown.split('class="chart chart-throughput"')[1].split("</figure>")[0]
    assert "chart-links" not in throughput, "the other charts link nowhere"


def test_an_unknown_actor_has_no_page_and_every_node_links_to_its_own(page: FlaskClient) -> None:
    assert page.get("/actors/nobody").status_code == 404
    mesh = page.get("/").get_data(as_text=True)
    for actor in ("split", "score", "x-sink"):
        assert mesh.count(f'href="/actors/{actor}"') == 2, "from the graph's node and the table's row"


def test_an_actors_page_says_why_cloudwatch_gave_no_history() -> None:
    class Refused:
        def history(self, actor: str, window: Any) -> History:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not allowed"}}, "GetMetricData")

    topology = Topology.of_mesh(load_mesh(REVIEWS))
    console = Console(topology, FixedStats(), FakeGateway(), "here", history=Refused())  # type: ignore[arg-type]
    answer = console_client(console).get("/actors/score")
    assert answer.status_code == 200
    shown = answer.get_data(as_text=True)
    assert "CloudWatch did not answer" in shown
    assert "AccessDenied" in shown
    assert '<dd data-stat="visible">7</dd>' in shown, "its figures now, still"
