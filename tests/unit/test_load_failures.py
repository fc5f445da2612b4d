"""`asya up` names an actor that cannot load its handler in red under its "is up" line, and marks the
actor in its table, from the record the actor's sidecar writes at its start (`asya_local.load_failures`);
the console draws it red on the mesh and says why on its page."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console as Terminal

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.stats import ActorStats
from asya_local.console.topology import Topology
from asya_local.live_view import LiveView
from asya_local.load_failures import LoadFailures
from tests.support.console_client import console_client
from tests.support.mesh import Mesh
from tests.unit.test_console import FakeGateway

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"


class _Mesh:
    """What the live view reads of the console: the reviews mesh's actors, idle, and no tasks."""

    def __init__(self) -> None:
        self.topology = Topology.of_mesh(load_mesh(REVIEWS))
        self.gateway = self

    def actor_stats(self) -> dict[str, ActorStats]:
        return {node.name: ActorStats() for node in self.topology.nodes}

    def tasks(self, **_query: Any) -> list[dict[str, Any]]:
        return []


def test_the_live_view_says_which_actor_cannot_load_its_handler_under_the_is_up_line(
    mesh: Mesh, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the records as the sidecar's log handler formats them: its stream is whichever stdout the process's
    # first sidecar found, so not always this test's captured one
    written: list[str] = []
    monkeypatch.setattr(logging.StreamHandler, "emit", lambda handler, record: written.append(handler.format(record)))
    mesh.actor("enrch", actor="split")  # the sidecar starts and writes its ERROR record
    failures = LoadFailures()
    for line in written:
        failures.take(line)
    assert failures.found() == {
        "split": "module 'tests.support.handlers' has no attribute 'enrch' (did you mean 'enrich'?)"
    }
    terminal = Terminal(record=True, width=250)
    terminal.print(LiveView(_Mesh(), None, None, ["mesh 'reviews' is up", "console: …"], failures))  # type: ignore[arg-type]
    lines = terminal.export_text().splitlines()
    assert lines[0] == "mesh 'reviews' is up"
    assert lines[1].startswith(
        "split cannot load its handler: module 'tests.support.handlers' has no attribute 'enrch' "
        "(did you mean 'enrich'?): each envelope it gets fails with this error"
    )
    assert lines[2] == "console: …"
    [row] = [line for line in lines if "│ split " in line or line.startswith("│ split")]
    assert "(handler not loaded)" in row


def test_other_lines_are_ignored() -> None:
    failures = LoadFailures()
    for line in ('{"level":"ERROR","message":"handler failed","actor":"score"}', "1 in, 1 done (5 ms)", "{not json"):
        failures.take(line)
    assert failures.found() == {}


class _BrokenSplit:
    def actor_stats(self) -> dict[str, ActorStats]:
        problem = "module 'actors' has no attribute 'splitt' (did you mean 'split'?)"
        return {"split": ActorStats(load_error=problem), "score": ActorStats()}


def test_the_consoles_mesh_and_actor_pages_mark_the_actor_with_its_load_error() -> None:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    client = console_client(Console(topology, _BrokenSplit(), FakeGateway(), "here"))  # type: ignore[arg-type]
    said = "split cannot load its handler: module &#39;actors&#39; has no attribute &#39;splitt&#39;"
    mesh_page = client.get("/").get_data(as_text=True)
    split = mesh_page.split('data-actor="split"', 1)[0].rsplit("<g ", 1)[1]
    assert "not-loaded" in split
    assert said in mesh_page
    score = mesh_page.split('data-actor="score"', 1)[0].rsplit("<g ", 1)[1]
    assert "not-loaded" not in score
    actor_page = client.get("/actors/split").get_data(as_text=True)
    assert f'<p class="error-message" role="alert">{said}' in actor_page
    assert 'role="alert"' not in client.get("/actors/score").get_data(as_text=True)
