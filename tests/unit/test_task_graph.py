"""A task's page draws the actors its route and flow can reach, not every actor of the mesh: a
summarise task of the reviews example draws no triage, escalate or x-pause (the review's complaint)."""

from __future__ import annotations

import re
from typing import Any

from asya.names import PAUSE, SINK, SUMP
from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.topology import Topology
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats


def drawn(task: dict[str, Any], *branches: dict[str, Any]) -> tuple[set[str], dict[tuple[str, str], bool]]:
    """The actors a task's page draws, and its edges (source, target) → whether dashed (not declared)."""
    gateway = FakeGateway()
    gateway.known = {item["id"]: item for item in (task, *branches)}
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    page = console_client(console).get(f"/tasks/{task['id']}").get_data(as_text=True)
    graph = page[page.index('id="graph"') : page.index("</svg>")]
    actors = set(re.findall(r'class="node [^"]*" data-actor="([^"]+)"', graph))
    edges = re.findall(
        r'<path class="edge( seen)?[^"]*" d="[^"]*" marker-end="[^"]*"\s+data-source="([^"]+)" data-target="([^"]+)"',
        graph,
    )
    return actors, {(source, target): bool(seen) for seen, source, target in edges}


def test_a_summarise_task_draws_its_flows_actors_and_the_crews_two_only() -> None:
    task = {
        "id": "s1",
        "flow": "summarise-reviews",
        "status": "running",
        "route": {"prev": ["split"], "curr": "score", "next": ["summarise"]},
    }
    actors, edges = drawn(task)
    assert actors == {"split", "score", "summarise", SINK, SUMP}, "no triage, escalate or x-pause"
    assert edges == {
        ("split", "score"): False,
        ("score", "summarise"): False,
        ("summarise", SINK): False,
        (SINK, SUMP): False,
    }


def test_an_actor_a_branchs_rewritten_route_reached_is_drawn_with_its_steps_dashed() -> None:
    root = {
        "id": "r1",
        "flow": "triage-reviews",
        "status": "running",
        "route": {"prev": ["split", "score", "triage"], "curr": "", "next": []},
        "branch_ids": ["b1"],
    }
    branch = {
        "id": "b1",
        "status": "succeeded",
        "route": {"prev": ["split", "score", "triage", "escalate"], "curr": "", "next": []},
    }
    actors, edges = drawn(root, branch)
    assert actors == {"split", "score", "triage", "escalate", SINK, SUMP}
    assert edges[("triage", "escalate")], "a step the flow does not declare: dashed"
    assert edges[("escalate", SINK)]
    assert not edges[("triage", SINK)]


def test_a_task_with_a_route_of_its_own_draws_it_as_declared_and_a_paused_one_x_pause() -> None:
    own = {"id": "o1", "status": "running", "route": {"prev": ["split"], "curr": "score", "next": []}}
    actors, edges = drawn(own)
    assert actors == {"split", "score", SINK, SUMP}
    assert edges[("split", "score")] is False
    paused = {"id": "p1", "status": "paused", "route": {"prev": ["split"], "curr": PAUSE, "next": []}}
    assert drawn(paused)[0] == {"split", PAUSE, SINK, SUMP}


def test_the_actor_a_failed_branch_failed_at_is_drawn() -> None:
    joined = {
        "id": "j1",
        "flow": "summarise-reviews",
        "status": "failed",
        "reason": "JoinFailed",
        "route": {"prev": ["split", "score"], "curr": "summarise", "next": []},
        "failed_branches": [{"id": "j2", "status": "failed", "actor": "triage", "branch": 2, "width": 2}],
    }
    assert "triage" in drawn(joined)[0]
