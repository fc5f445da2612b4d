"""The console's parts without a browser: the work counted from metric lines, the worker log, the
graph's layout, and every page and form against a stand-in gateway (the browser tests are in
tests/integration/test_console_browser.py)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit
from flask.testing import FlaskClient

from asya.names import PAUSE, SINK, SUMP
from asya.telemetry import Telemetry
from asya_cdk.loading import load_mesh
from asya_local.console.activity import ActivityCounter
from asya_local.console.app import Console
from asya_local.console.graph import NODE_WIDTH, layout
from asya_local.console.stats import ActorStats
from asya_local.console.topology import Topology
from asya_local.gateway_client import GatewayClient, GatewayError
from asya_local.worklog import WorkerLog, follow, is_error, shown
from tests.support.console_client import console_client

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"


def metric_lines(capsys: pytest.CaptureFixture[str], actor: str, namespace: str = "reviews") -> list[str]:
    """What an actor's sidecar prints for a batch: 3 forwarded, 1 failed (RuntimeError), 1 sumped."""
    telemetry = Telemetry(namespace, actor)
    telemetry.count("MessagesReceived", amount=5)
    telemetry.observe("ProcessingDuration", MetricUnit.Milliseconds, 3.0)
    telemetry.count("MessagesProcessed", "outcome", "forwarded", amount=3)
    telemetry.count("MessagesProcessed", "outcome", "failed")
    telemetry.count("MessagesProcessed", "outcome", "sumped")
    telemetry.count("MessagesFailed", "reason", "HandlerError")
    telemetry.count("MessagesFailed", "reason", "HandlerTimeout")
    telemetry.flush()
    return capsys.readouterr().out.splitlines()


def test_the_work_is_counted_from_the_metric_lines_the_sidecar_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    counter = ActivityCounter("reviews")
    lines = metric_lines(capsys, "score") + metric_lines(capsys, "score") + metric_lines(capsys, "split", "other")
    assert all(counter.take(line) for line in lines), "every one is a metric line"
    assert not counter.take("10 in, 10 done (12 ms)")
    work = counter.activity()
    assert set(work) == {"score"}, "another mesh's lines are not this one's"
    assert (work["score"].processed, work["score"].failed) == (10, 4)
    assert work["score"].per_minute() == pytest.approx(2.0)


def test_old_minutes_fall_out_of_the_window(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    now = [time.time()]
    counter = ActivityCounter("reviews", window=120, clock=lambda: now[0])
    for line in metric_lines(capsys, "score"):
        counter.take(line)
    assert counter.activity()["score"].processed == 5
    now[0] += 400
    assert counter.activity() == {}


def test_the_worker_log_keeps_every_line_and_shows_only_errors(tmp_path: Path) -> None:
    shown_lines: list[tuple[str, str]] = []
    tapped: list[str] = []
    log = WorkerLog(tmp_path / "mesh.log", lambda source, line: shown_lines.append((source, line)), [tapped.append])
    error = json.dumps({"level": "ERROR", "message": "envelope reached x-sump", "reason": "HandlerTimeout"})
    lines = [
        ("score", "10 in, 10 done (12 ms)"),
        ("score", json.dumps({"level": "WARNING", "message": "handler failed"})),
        ("x-sump", error),
        ("split", "function error, 3 message(s) return after the visibility timeout"),
        ("split", "Traceback (most recent call last):"),
        ("split", '  File "actors.py", line 3, in split'),
        ("split", "ValueError: boom"),
        ("split", "3 in, 3 done (5 ms)"),
    ]
    for source, line in lines:
        log(source, line)
    log.close()
    assert [line for _, line in shown_lines] == [error, *(line for _, line in lines[3:7])]
    assert tapped == [line for _, line in lines]
    written = (tmp_path / "mesh.log").read_text().splitlines()
    assert len(written) == len(lines)
    assert written[0].endswith(" score | 10 in, 10 done (12 ms)")
    assert shown(error) == "envelope reached x-sump: HandlerTimeout"
    assert is_error("execution environment was stopped; starting a new one")


def test_an_error_record_on_screen_is_one_line_of_why_without_its_traceback() -> None:
    """x-sump's record of a handler's failure, as `asya up` shows it: the envelope by its short id,
    the reason, actor and `Type: message`; not the record's JSON, whose traceback names the machine's
    folders (the worker log keeps the record whole)."""
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/root/.cache/asya-aws/sources/0f3c/asya/hop.py", line 80, in run\n'
        "    out = handler(payload)\n"
        "ValueError: review 2 of lamp-2 has no text"
    )
    envelope = "1a2b3c4d-0000-4000-8000-000000000000"
    error = {"message": "review 2 of lamp-2 has no text", "type": "ValueError", "mro": [], "traceback": trace}
    record = {
        "level": "ERROR",
        "message": "envelope reached x-sump",
        "correlation_id": envelope,
        "envelope_id": envelope,
        "reason": "HandlerError",
        "actor": "score",
        "error": error,
    }
    line = shown(json.dumps(record))
    assert line == "envelope 1a2b3c4d reached x-sump: HandlerError at score: ValueError: review 2 of lamp-2 has no text"
    failed = {"level": "ERROR", "message": "hop failed", "error_type": "KeyError", "error_message": "'text'\n"}
    assert shown(json.dumps(failed)) == "hop failed: KeyError: 'text'", "the fields a sidecar's record has"
    long = shown(json.dumps({**record, "error": {**error, "message": "x" * 1000}}))
    assert (len(long), long[-1]) == (300, "…"), "cut, on one line"


def test_a_log_is_followed_from_where_it_was_then_and_from_its_start_once_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "mesh.log"
    path.write_text("t a | before\n")
    stop = threading.Event()
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.extend(follow(path, stop, poll_seconds=0.01)))
    thread.start()
    time.sleep(0.1)
    with path.open("a") as log:
        log.write("t a | one\nt b | two\nt b | thr")
    time.sleep(0.1)
    with path.open("a") as log:
        log.write("ee\n")
    time.sleep(0.1)
    path.write_text("t c | anew\n")
    time.sleep(0.1)
    stop.set()
    thread.join(timeout=2)
    assert seen == ["one", "two", "three", "anew"]


def test_the_graph_reads_every_flow_left_to_right_and_puts_the_crew_last() -> None:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    drawn = layout(topology)
    place = {box.node.name: (box.x, box.y) for box in drawn.boxes}
    assert set(place) == {"split", "score", "triage", "escalate", "summarise", PAUSE, SINK, SUMP}, "x-pause too"
    assert place["split"][0] < place["score"][0] < place["triage"][0] < place[SINK][0]
    assert place["triage"][0] == place["summarise"][0], "both third in their flows"
    assert place[SINK][0] == place[SUMP][0]
    assert place[SUMP][1] > place[SINK][1]
    routed = max(y for name, (_, y) in place.items() if name not in ("escalate", PAUSE))
    assert place["escalate"][1] > routed, "in no flow"
    assert place[PAUSE][1] > routed, "no flow of the example names x-pause: a handler's rewritten route goes there"
    edges = {(edge.source, edge.target): edge.flows for edge in drawn.edges}
    assert edges[("split", "score")] == ("triage-reviews", "summarise-reviews")
    assert edges[("summarise", SINK)] == ("summarise-reviews",)
    assert edges[(SINK, SUMP)] == ()
    assert drawn.width >= place[SINK][0] + NODE_WIDTH
    kinds = {node.name: (node.kind, node.join) for node in topology.nodes}
    assert kinds["summarise"] == ("lambda", "tolerate 25%")
    assert kinds[SINK] == ("crew", None)


class FakeGateway:
    """What the console asks of the gateway, answered from memory, with what was asked kept."""

    url = "http://gateway.test"

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.canceled: list[str] = []
        self.resumed: list[tuple[str, dict[str, Any]]] = []
        self.redriven: list[tuple[str, dict[str, Any]]] = []
        self.listed: list[dict[str, Any]] = []
        self.sump_asked: list[dict[str, str]] = []
        self.known = {
            "t1": {
                "id": "t1",
                "flow": "triage-reviews",
                "status": "running",
                "terminal": False,
                "progress": 33.3,
                "actor": "score",
                "route": {"prev": ["split"], "curr": "score", "next": ["triage"]},
                "created_at": "2026-11-26T10:00:00.000Z",
                "updated_at": "2026-11-26T10:00:01.000Z",
                "hops": [
                    {"actor": "split", "attempt": 1, "started_at": "2026-11-26T10:00:00.100Z", "seconds": 0.25},
                    {"actor": "score", "attempt": 1, "started_at": "2026-11-26T10:00:00.350Z", "seconds": None},
                ],
            },
            "t2": {
                "id": "t2",
                "status": "paused",
                "terminal": False,
                "pause": {
                    "prompt": "Approve the refund?",
                    "fields": {"approved": {"type": "boolean"}, "amount": {"type": "number"}},
                },
                "route": {"prev": ["split"], "curr": "x-pause", "next": []},
            },
            "t3": {
                "id": "t3",
                "status": "failed",
                "terminal": True,
                "reason": "HandlerError",
                "error": {
                    "message": "<bad> input",
                    "type": "ValueError",
                    "traceback": "Traceback ...\nValueError: <bad>",
                },
                "route": {"prev": ["split"], "curr": "score", "next": ["triage"]},
            },
        }

    def flows(self) -> list[dict[str, Any]]:
        return [{"name": "triage-reviews", "inputSchema": {"examples": [{"product": "p", "reviews": ["ok"]}]}}]

    def create_task(self, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(body)
        return {"id": "t9"}

    def task(self, task_id: str) -> dict[str, Any] | None:
        return self.known.get(task_id)

    def task_page(self, **where: Any) -> dict[str, Any]:
        """The known tasks of the status asked for, and a cursor to an older page from the first."""
        self.listed.append(where)
        if where.get("cursor") == "stale":
            raise GatewayError("400: cursor is not one this API returned", 400)
        found = [task for task in self.known.values() if where.get("status") in (None, "all", task["status"])]
        return {"tasks": found, "next_cursor": None if where.get("cursor") else "older+page"}

    def tasks(self, **where: Any) -> list[dict[str, Any]]:
        return list(self.task_page(**where)["tasks"])

    def starting_with(self, given: str, limit: int = 10) -> dict[str, Any]:
        """As `GET /mesh?id_prefix=` answers: the known tasks whose id starts with it, in any case."""
        found = [task for task_id, task in self.known.items() if task_id.lower().startswith(given.lower())]
        return {"tasks": found[:limit], "more": len(found) > limit}

    task_id = GatewayClient.task_id  # the real lookup of a short id, over this gateway's answer

    def cancel(self, task_id: str) -> dict[str, Any]:
        self.canceled.append(task_id)
        return {}

    def resume(self, task_id: str, given: dict[str, Any]) -> dict[str, Any]:
        self.resumed.append((task_id, given))
        return {}

    def sump(self, **filters: str) -> Iterator[dict[str, Any]]:
        self.sump_asked.append(filters)
        entries = [
            {
                "id": "e1",
                "reason": "HandlerTimeout",
                "actor": "score",
                "arrived_at": "2026-11-26T10:00:00Z",
                "message": "slow",
            },
            {
                "id": "e2",
                "reason": "HandlerTimeout",
                "actor": "score",
                "arrived_at": "2026-11-26T10:01:00Z",
                "message": "slow",
            },
            {
                "id": "e3",
                "reason": "ParseError",
                "actor": "split",
                "arrived_at": "2026-11-26T10:02:00Z",
                "message": "x",
            },
            *(
                {"id": f"h{n}", "reason": "HandlerError", "actor": "score", "error_type": kind, "message": "bad"}
                for n, kind in enumerate(("ValueError", "KeyError", "ValueError"))
            ),
        ]
        return iter([entry for entry in entries if not filters.get("reason") or entry["reason"] == filters["reason"]])

    def sump_entry(self, envelope_id: str) -> dict[str, Any]:
        return {
            "entry": {
                "id": envelope_id,
                "reason": "HandlerTimeout",
                "actor": "score",
                "at": "score",
                "arrived_at": "2026-11-26T10:00:00Z",
                "message": "slow",
                "task_id": "t1",
            },
            "kept": {"id": envelope_id, "payload": {"x": "<y>"}},
        }

    def redrive(self, envelope_id: str, body: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        self.redriven.append((envelope_id, body))
        return True, {"id": envelope_id, "to": body.get("to", "score"), "redrives": 1}


class FixedStats:
    def actor_stats(self) -> dict[str, ActorStats]:
        return {"score": ActorStats(visible=7, in_flight=2, age_seconds=12.4, per_minute=30.0, failed=1)}


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def client(gateway: FakeGateway) -> FlaskClient:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    console = Console(topology, FixedStats(), gateway, "the local stack at http://127.0.0.1:4566", refresh=0.01)  # type: ignore[arg-type]
    return console_client(console)


def test_the_mesh_page_draws_every_actor_with_its_stats_and_offers_each_flow(client: FlaskClient) -> None:
    page = client.get("/").get_data(as_text=True)
    for actor in ("split", "score", "triage", "escalate", "summarise", SINK, SUMP):
        assert f'data-actor="{actor}"' in page
    assert '<tspan data-stat="visible">7</tspan>' in page
    assert '<td data-stat="per_minute">30.0</td>' in page
    assert 'data-flow="summarise-reviews"' in page
    assert '<option value="triage-reviews" data-example=\'{"product": "p", "reviews": ["ok"]}\'' in page
    assert "http" not in page.replace("http://127.0.0.1:4566", "").replace("http://gateway.test", ""), (
        "no request leaves the console's own server"
    )


def test_a_join_has_a_colour_of_its_own_and_x_pause_is_drawn(client: FlaskClient) -> None:
    """A join is not a person's wait: its frame is not in the pause colour. x-pause, where a paused task
    waits (reached by a handler's rewritten route in the example), is on the graph as the crew is."""
    page = client.get("/").get_data(as_text=True)
    assert 'class="node kind-crew" data-actor="x-pause"' in page
    css = (Path(__file__).resolve().parents[2] / "asya_local" / "console" / "static" / "console.css").read_text()
    assert ".node.join rect { stroke: var(--join);" in css
    light, dark = css.split("@media (prefers-color-scheme: dark)", 1)
    for scheme in (light, dark):
        join = re.search(r"--join: (#[0-9a-f]{6});", scheme)
        pause = re.search(r"--pause: (#[0-9a-f]{6});", scheme)
        assert join, "both schemes give joins a colour"
        assert pause
        assert join[1] != pause[1], "apart from the pause's"


def test_a_task_started_from_the_page_is_created_and_shown(client: FlaskClient, gateway: FakeGateway) -> None:
    answer = client.post("/tasks", data={"flow": "triage-reviews", "payload": '{"product": "p", "reviews": []}'})
    assert (answer.status_code, answer.headers["Location"]) == (303, "/tasks/t9")
    assert gateway.created == [{"flow": "triage-reviews", "payload": {"product": "p", "reviews": []}}]
    refused = client.post("/tasks", data={"flow": "triage-reviews", "payload": '{"product": nope'})
    assert refused.status_code == 400
    page = refused.get_data(as_text=True)
    assert "The payload is not JSON" in page
    assert "{&#34;product&#34;: nope</textarea>" in page, "what was typed is kept, to be mended"
    assert len(gateway.created) == 1, "nothing started"


def test_a_task_shows_its_route_hops_and_error_escaped(client: FlaskClient) -> None:
    page = client.get("/tasks/t1").get_data(as_text=True)
    assert '"split": "visited"' in page
    assert '"score": "current"' in page
    assert '"triage": "next"' in page
    assert "<td>0.25 s</td>" in page
    assert "running</td>" in page
    assert 'action="/tasks/t1/cancel"' in page
    failed = client.get("/tasks/t3").get_data(as_text=True)
    assert "&lt;bad&gt; input" in failed
    assert "<bad>" not in failed
    assert 'action="/tasks/t3/cancel"' not in failed, "an ended task is not canceled"
    assert client.get("/tasks/nope").status_code == 404


def test_a_short_id_in_any_case_leads_to_the_one_task_it_names(client: FlaskClient) -> None:
    assert client.get("/tasks/T1").headers["Location"] == "/tasks/t1"
    assert client.get("/tasks/find?id=T3").headers["Location"] == "/tasks/T3"  # which leads to t3


def test_a_short_id_that_names_none_or_several_keeps_the_search_box(client: FlaskClient) -> None:
    several = client.get("/tasks/t")
    page = several.get_data(as_text=True)
    assert several.status_code == 404
    assert "&#39;t&#39; matches t1, t2, t3: give more of the id" in page
    assert all(f'href="/tasks/{task_id}"' in page for task_id in ("t1", "t2", "t3")), "each one linked"
    none = client.get("/tasks/x9").get_data(as_text=True)
    assert "no task starts with &#39;x9&#39;: give its whole id" in none
    assert 'action="/tasks/find"' in none, "the search box"
    assert 'value="x9"' in none, "holding what was typed"
    whole = "6a1d7f7e-0000-4000-8000-000000000000"
    unknown = client.get(f"/tasks/{whole}")
    assert unknown.status_code == 404
    assert f"no task &#39;{whole}&#39;" in unknown.get_data(as_text=True)
    assert f'value="{whole}"' in unknown.get_data(as_text=True), "a whole id that names no task: the box too"


def test_cancel_and_resume_from_the_page(client: FlaskClient, gateway: FakeGateway) -> None:
    assert client.post("/tasks/t1/cancel").status_code == 303
    assert gateway.canceled == ["t1"]
    form = client.get("/tasks/t2").get_data(as_text=True)
    assert "Approve the refund?" in form
    assert 'name="field-approved"' in form
    assert 'type="number"' in form
    answer = client.post(
        "/tasks/t2/resume", data={"field-approved": "on", "field-amount": "12.5", "input": '{"note": "ok"}'}
    )
    assert answer.status_code == 303
    assert gateway.resumed == [("t2", {"approved": True, "amount": 12.5, "note": "ok"})]


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"input": "approve it"}, "the input is not JSON"),
        ({"input": "[1, 2]"}, "the input is JSON but not an object"),
        ({"field-amount": "twelve", "input": ""}, "amount: &#39;twelve&#39; is not a number"),
    ],
)
def test_a_resume_that_is_not_what_the_pause_asks_for_is_refused_and_kept(
    client: FlaskClient, gateway: FakeGateway, form: dict[str, str], said: str
) -> None:
    """A resume cannot be undone: text that is not JSON is never wrapped and sent; the task stays
    paused, and the page shows why with what was typed still in the form."""
    answer = client.post("/tasks/t2/resume", data={"field-approved": "on", **form})
    page = answer.get_data(as_text=True)
    assert answer.status_code == 400
    assert gateway.resumed == []
    assert f"Not resumed: {said}" in page
    assert 'name="field-approved" checked data-typed' in page
    typed = form.get("input") or form.get("field-amount")
    assert typed is not None
    assert typed.replace("twelve", 'value="twelve"') in page


def test_x_sump_is_grouped_by_reason_error_type_and_actor_and_redriven_from_the_page(
    client: FlaskClient, gateway: FakeGateway
) -> None:
    page = client.get("/sump").get_data(as_text=True)
    assert page.index("HandlerTimeout</a></th><td></td><td>score</td><td>2</td>") < page.index(
        "ParseError</a></th><td></td><td>split</td><td>1"
    )
    assert "HandlerError</a></th><td>ValueError</td><td>score</td><td>2</td>" in page, "a handler's error by its type"
    assert "HandlerError</a></th><td>KeyError</td><td>score</td><td>1</td>" in page
    assert 'href="/sump?reason=HandlerError&amp;type=KeyError&amp;actor=score"' in page
    only = client.get("/sump?reason=HandlerError&type=KeyError&actor=score").get_data(as_text=True)
    assert 'href="/sump/h1"' in only
    assert 'href="/sump/h0"' not in only
    entry = client.get("/sump/e1").get_data(as_text=True)
    assert "&lt;y&gt;" in entry
    assert 'action="/sump/e1/redrive"' in entry
    done = client.post("/sump/e1/redrive", data={"to": "triage", "payload": '{"fixed": true}'})
    assert "Redriven to <strong>triage</strong>" in done.get_data(as_text=True)
    assert gateway.redriven == [("e1", {"to": "triage", "payload": {"fixed": True}})]


def test_the_task_list_filters_and_streams_live_rows_and_stats(client: FlaskClient, gateway: FakeGateway) -> None:
    page = client.get("/tasks?status=paused&flow=triage-reviews&since=1h").get_data(as_text=True)
    assert '<a href="/tasks/t2">' in page
    assert gateway.listed[-1]["status"] == "paused"
    assert gateway.listed[-1]["flow"] == "triage-reviews"
    assert gateway.listed[-1]["since"].endswith("Z")
    stream = client.get("/events/mesh?tasks=1&status=running")
    assert stream.headers["Content-Type"].startswith("text/event-stream")
    chunks: Iterator[bytes] = iter(stream.response)  # type: ignore[arg-type]  # a streamed body: bytes
    first = b"".join(next(chunks) for _ in range(3)).decode()
    assert "event: stats" in first
    assert '"visible": 7' in first
    assert "event: tasks" in first
    assert '<a href="/tasks/t1">' in first
    stream.close()


def test_the_task_list_is_a_link_to_its_filters_and_page_and_only_its_newest_page_is_live(
    client: FlaskClient, gateway: FakeGateway
) -> None:
    """Every filter and the page live in the URL; "Older →" carries the gateway's cursor; an older page
    is not replaced by live updates; a local time is read in the browser's zone."""
    first = client.get("/tasks?actor=score&since=2026-11-26+10:00&tz=Europe/Berlin").get_data(as_text=True)
    asked = gateway.listed[-1]
    assert (asked["status"], asked["actor"], asked["since"]) == ("all", "score", "2026-11-26T09:00:00Z")
    assert "Tasks that reached score started after 2026-11-26 10:00, newest first, live" in first
    older = "/tasks?actor=score&amp;since=2026-11-26+10:00&amp;tz=Europe/Berlin&amp;cursor=older%2Bpage"
    assert f'<a href="{older}" rel="next">Older →</a>' in first
    assert 'data-live="/events/mesh?tasks=1&amp;actor=score&amp;since=2026-11-26+10:00&amp;tz=Europe/Berlin"' in first
    assert "← Newest" not in first
    second = client.get(older.replace("&amp;", "&")).get_data(as_text=True)
    assert gateway.listed[-1]["cursor"] == "older+page"
    assert "data-live" not in second
    assert "an older page, not live" in second
    assert '<a href="/tasks?actor=score&amp;since=2026-11-26+10:00&amp;tz=Europe/Berlin" rel="first">' in second
    assert "<option selected>score</option>" in second
    assert 'value="2026-11-26 10:00"' in second


def test_the_live_task_list_keeps_the_filters_and_a_time_not_understood_is_named(
    client: FlaskClient, gateway: FakeGateway
) -> None:
    stream = client.get("/events/mesh?tasks=1&status=failed&actor=score&cursor=older+page")
    chunks: Iterator[bytes] = iter(stream.response)  # type: ignore[arg-type]  # a streamed body: bytes
    sent = b"".join(next(chunks) for _ in range(3)).decode()
    stream.close()
    assert "event: tasks" in sent
    assert (gateway.listed[-1]["status"], gateway.listed[-1]["actor"]) == ("failed", "score")
    assert gateway.listed[-1]["cursor"] is None, "live: the newest page, whatever page the link was"
    refused = client.get("/tasks?until=soon")
    assert refused.status_code == 400
    assert "Started before: &#39;soon&#39; is not a time" in refused.get_data(as_text=True)
    stale = client.get("/tasks?flow=triage-reviews&cursor=stale")
    assert stale.status_code == 400
    shown = stale.get_data(as_text=True)
    assert "The gateway refused this list: 400: cursor is not one this API returned" in shown
    assert '<a href="/tasks?flow=triage-reviews" rel="first">← Newest</a>' in shown


def test_a_filter_or_page_size_not_read_shows_the_problem_and_the_form_and_no_list(
    client: FlaskClient, gateway: FakeGateway
) -> None:
    """No caption that claims a filter the list does not apply, no "No tasks." that is not true."""
    for url, problem in (
        ("/tasks?since=yesterday&status=failed", "Started after: &#39;yesterday&#39; is not a time"),
        ("/tasks?limit=500", "Page size: &#39;500&#39; is not a number of tasks from 1 to 100"),
        ("/tasks?limit=0", "Page size: &#39;0&#39; is not a number of tasks from 1 to 100"),
    ):
        answer = client.get(url)
        page = answer.get_data(as_text=True)
        assert answer.status_code == 400
        assert problem in page
        assert 'aria-label="Filter tasks"' in page, "the form, to mend the filter"
        for claimed in ("<caption>", "newest first", "No tasks.", 'id="task-rows"'):
            assert claimed not in page, url
    assert gateway.listed == [], "nothing was listed"
    client.get("/tasks?limit=100")
    assert gateway.listed[-1]["limit"] == 100


def test_x_sump_since_takes_how_long_ago_as_the_task_list_and_the_cli_do(
    client: FlaskClient, gateway: FakeGateway
) -> None:
    page = client.get("/sump?since=1h").get_data(as_text=True)
    assert gateway.sump_asked[-1]["since"].endswith("Z")
    assert 'placeholder="1h or 2026-11-26 10:00"' in page
    assert 'list="ago"' in page
    assert '<option value="1h">' in page
    local = client.get("/sump?since=2026-11-26+10:00&tz=Europe/Berlin")
    assert local.status_code == 200
    assert gateway.sump_asked[-1]["since"] == "2026-11-26T09:00:00Z"
    asked = len(gateway.sump_asked)
    refused = client.get("/sump?since=yesterday")
    shown = refused.get_data(as_text=True)
    assert refused.status_code == 400
    assert "Since: &#39;yesterday&#39; is not a time" in shown
    assert 'class="groups"' not in shown
    assert "kept nothing" not in shown
    assert len(gateway.sump_asked) == asked


def test_each_filter_keeps_its_label_with_its_control_and_wide_tables_scroll_in_their_frame(
    client: FlaskClient,
) -> None:
    tasks = client.get("/tasks").get_data(as_text=True)
    for field in ("status", "flow", "actor", "since", "until"):
        assert f'<span class="field"><label for="{field}">' in tasks
    sump = client.get("/sump").get_data(as_text=True)
    for field in ("reason", "actor", "since"):
        assert f'<span class="field"><label for="{field}">' in sump
    mesh = client.get("/").get_data(as_text=True)
    task = client.get("/tasks/t1").get_data(as_text=True)
    for page, table in ((tasks, "tasks"), (sump, "groups"), (sump, "entries"), (mesh, "actors"), (task, "hops")):
        before = page[: page.index(f'<table class="{table}"')].rstrip()
        assert before.endswith('<div class="scrolls">') or before.endswith('<div class="scrolls task-list">'), table


def test_a_task_that_ended_without_succeeding_shows_how_far_it_got_not_a_full_bar(
    client: FlaskClient, gateway: FakeGateway
) -> None:
    """The gateway records every ended task at 100 %: a failed one reads as stopped where it stopped."""
    gateway.known["t3"]["progress"] = 100
    gateway.known["t4"] = {
        "id": "t4",
        "status": "succeeded",
        "terminal": True,
        "progress": 100,
        "route": {"prev": ["split", "score"], "curr": "triage", "next": []},
    }
    failed = client.get("/tasks/t3").get_data(as_text=True)
    state = failed[failed.index("<dt>progress</dt>") :]
    state = state[: state.index("</dd>")]
    assert "stopped at score, 1 of 3 actors done" in state
    assert "<progress" not in state
    assert "100 %" not in state
    rows = client.get("/tasks").get_data(as_text=True)
    failed_row = rows[rows.index('href="/tasks/t3"') :]
    failed_row = failed_row[: failed_row.index("</tr>")]
    assert "stopped at score, 1 of 3 actors done" in failed_row
    assert "<progress" not in failed_row
    gateway.known["t5"] = {
        "id": "t5",
        "status": "failed",
        "terminal": True,
        "progress": 100,
        "route": {"prev": ["split", "score", "triage"], "curr": "", "next": []},  # its own envelope ended well
        "branches": {"total": 3, "open": 0, "succeeded": 2, "failed": 1, "canceled": 0},
        "failed_branches": [{"id": "b1", "status": "failed", "actor": "score"}],
    }
    fan_out = client.get("/tasks/t5").get_data(as_text=True)
    assert "1 of 3 branches failed (at score)" in fan_out
    succeeded = client.get("/tasks/t4").get_data(as_text=True)
    assert '<progress max="100" value="100">' in succeeded


def test_the_terminal_live_view_shows_actors_tasks_and_results(gateway: FakeGateway) -> None:
    from rich.console import Console as Terminal

    from asya_local.live_view import LiveView

    class Counts:
        def query(self, **request: Any) -> dict[str, int]:
            return {
                "Count": {"running": 3, "succeeded": 12}.get(request["ExpressionAttributeValues"][":status"]["S"], 0)
            }

    gateway.known["t4"] = {
        "id": "t4",
        "flow": "triage-reviews",
        "status": "succeeded",
        "output": {"score": 2},
        "updated_at": "2026-11-26T10:00:09.000Z",
    }
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    mesh = Console(topology, FixedStats(), gateway, "here")  # type: ignore[arg-type]
    terminal = Terminal(record=True, width=140)
    terminal.print(LiveView(mesh, Counts(), "asya-tasks", ["mesh 'reviews' is up"]))
    shown = terminal.export_text()
    assert "mesh 'reviews' is up" in shown
    assert re.search(r"score\s+│\s+λ\s+│\s+7\s+│\s+2\s+│\s+0\s+│\s+12 s\s+│\s+30\.0\s+│\s+1", shown), shown
    assert "running 3" in shown
    assert "succeeded 12" in shown
    assert re.search(r"t1\s+│ triage-reviews\s+│ score\s+│ ━+ 33 %", shown), shown
    assert re.search(r"t2\s+│\s+│ waiting for a person\s+│ ━+ 0 %", shown), "a paused task, as paused"
    assert '{"score": 2}' in shown, "a result as it lands"


def test_spark_actors_are_marked_on_the_graph_with_their_jobs(gateway: FakeGateway) -> None:
    catalogue = Topology.of_mesh(load_mesh(REVIEWS.parents[1] / "catalogue" / "mesh.yaml"))
    console = Console(catalogue, FixedStats(), gateway, "here")  # type: ignore[arg-type]
    page = console_client(console).get("/").get_data(as_text=True)
    for actor in ("clean", "score"):
        assert f'<g class="node kind-spark" data-actor="{actor}"' in page
        own = page.split(f'data-actor="{actor}"', 1)[1].split("</g>", 1)[0]  # the actor's node
        assert '<tspan data-stat="open_batches">0</tspan> jobs' in own
    assert '<g class="node kind-lambda" data-actor="ingest"' in page


def test_a_task_is_found_by_the_id_typed_in_the_search_box(client: FlaskClient) -> None:
    page = client.get("/tasks").get_data(as_text=True)
    assert 'action="/tasks/find"' in page
    assert client.get("/tasks/find?id=t2").headers["Location"] == "/tasks/t2"
    assert client.get("/tasks/t2").status_code == 200
    assert client.get("/tasks/find?id=+").headers["Location"] == "/tasks"


def test_times_are_marked_for_local_display_with_utc_on_hover(client: FlaskClient) -> None:
    """The page's script shows each `<time data-local>` in the reader's zone; the stamp stays as title."""
    page = client.get("/tasks/t1").get_data(as_text=True)
    started = re.search(r'<dt>started</dt><dd><time datetime="([^"]+)" title="([^"]+)" data-local>', page)
    assert started is not None
    assert started.group(2) == f"{started.group(1)} UTC"


def test_a_failed_tasks_kept_failure_is_not_called_its_result(client: FlaskClient, gateway: FakeGateway) -> None:
    """x-sink keeps a failed envelope where it keeps results: the page says what is kept there."""
    link = "s3://results/reviews/t7/failed.json"
    gateway.known["t7"] = {"id": "t7", "status": "failed", "terminal": True, "result": link}
    page = client.get("/tasks/t7").get_data(as_text=True)
    kept = page[page.index('id="result-heading"') :]
    assert kept.startswith('id="result-heading">Failure kept</h2>')
    assert f"<code>{link}</code>" in kept
