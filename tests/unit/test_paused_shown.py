"""A task waiting for a person reads as paused where a person looks: its status, its progress at the
pause, the pause marked on its graph, and the wait as its own line of the hops, not charged to the
hop before it (which otherwise showed "running" for as long as the person took)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import asya.task_store
from asya.envelope import Route
from asya.task_record import Report
from asya.task_store import TaskStore
from asya_cdk.loading import load_mesh
from asya_gateway.views import task_view
from asya_local.console import app
from asya_local.console.topology import Topology
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats

START = dt.datetime(2026, 11, 27, 10, 0, tzinfo=dt.UTC)


class Clock:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now

    def after(self, seconds: float) -> dt.datetime:
        self.now = START + dt.timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr(asya.task_store, "utc_now", ticking)
    return ticking


def claim(store: TaskStore, prev: list[str], curr: str, following: list[str]) -> None:
    route = {"prev": prev, "curr": curr, "next": following}
    report = Report(task_id="t1", actor=curr, route=route, phase="processing", progress=0)
    store.claim_hop(report, len(prev), held_until_ms=0)


def test_a_paused_task_shows_where_it_waits_and_the_wait_as_its_own_line(task_store: TaskStore, clock: Clock) -> None:
    task_store.create({"id": "t1"})
    claim(task_store, [], "prep", ["x-pause", "post"])
    waiting_at = Route(prev=["prep"], curr="x-pause", next=["post"])
    assert task_store.pause("t1", {"prompt": "ok?"}, clock.after(2), waiting_at) is not None
    record = task_store.get("t1")
    assert record is not None
    paused = task_view(record)
    assert (paused["status"], paused["actor"], paused["progress"]) == ("paused", "x-pause", pytest.approx(33.33))
    assert [(hop["actor"], hop["waiting"], hop["seconds"]) for hop in paused["hops"]] == [
        ("prep", False, 2.0),  # prep is done: the person's wait is not its time
        ("x-pause", True, None),  # still waiting
    ]
    resumed = task_store.resume(record, clock.after(600))
    assert resumed is not None
    clock.after(601)
    claim(task_store, ["prep", "x-pause"], "post", [])
    record = task_store.get("t1")
    assert record is not None
    assert [(hop["actor"], hop["seconds"]) for hop in task_view(record)["hops"]] == [
        ("prep", 2.0),
        ("x-pause", 599.0),  # from the pause to the next hop's claim after the resume
        ("post", None),
    ]


def _paused_page(known: dict[str, Any]) -> str:
    gateway = FakeGateway()
    gateway.known["t5"] = known
    console = app.Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    client = console_client(console)
    return str(client.get("/tasks/t5").get_data(as_text=True))


def test_the_task_page_marks_the_pause_and_shows_the_persons_wait() -> None:
    page = _paused_page(
        {
            "id": "t5",
            "status": "paused",
            "terminal": False,
            "progress": 33.33,
            "actor": "x-pause",
            "pause": {"prompt": "Approve?", "fields": {}},
            "route": {"prev": ["prep"], "curr": "x-pause", "next": ["post"]},
            "hops": [
                {"actor": "prep", "waiting": False, "attempt": 1, "started_at": START.isoformat(), "seconds": 2.0},
                {"actor": "x-pause", "waiting": True, "attempt": 1, "started_at": START.isoformat(), "seconds": None},
            ],
        }
    )
    assert '<span class="status status-paused">paused</span>' in page
    assert "33 %" in page
    assert '"x-pause": "paused"' in page, "the graph marks where the task waits"
    hops = page[page.index('id="hops-heading"') : page.index("</table>", page.index('id="hops-heading"'))]
    assert "<td>2.00 s</td>" in hops
    assert '<th scope="row">waiting for a person</th>' in hops
    assert "<td>waiting</td>" in hops
    assert "running" not in hops
