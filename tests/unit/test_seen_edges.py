"""Steps that tasks took and no flow declares (a handler rewrote the route: `escalate` in the reviews
example) are drawn on the mesh's graph, dashed, from the routes of the gateway's recent tasks; an actor
in no flow stands after the flows' actors, where it stands whether a step to it was seen or not."""

from __future__ import annotations

import re
from typing import Any

from asya.names import SINK, SUMP
from asya_cdk.loading import load_mesh
from asya_local.console import app
from asya_local.console.graph import NODE_WIDTH, layout
from asya_local.console.seen import SeenRoutes, steps_of
from asya_local.console.topology import Topology
from asya_local.gateway_client import GatewayUnreachableError
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats

ESCALATED: dict[str, Any] = {
    "id": "b1",
    "status": "succeeded",
    "route": {"prev": ["split", "score", "triage", "escalate"], "curr": "", "next": []},
}


def test_a_tasks_steps_are_read_from_its_route() -> None:
    assert steps_of(ESCALATED) == [("split", "score"), ("score", "triage"), ("triage", "escalate"), ("escalate", SINK)]
    running = {"status": "running", "route": {"prev": ["split"], "curr": "score", "next": ["triage"]}}
    assert steps_of(running) == [("split", "score")], "only where it has been"
    assert steps_of({"status": "pending"}) == []


class Listing:
    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks_listed = tasks
        self.reads = 0
        self.down = False

    def tasks(self, *, status: str | None = None, limit: int = 50, roots: bool = True) -> list[dict[str, Any]]:
        if self.down:
            raise GatewayUnreachableError("no gateway")
        assert not roots, "branches are where rewritten routes usually are"
        self.reads += 1
        return [task for task in self.tasks_listed if status in (None, task["status"])][:limit]


def test_the_steps_are_read_at_most_once_per_refresh_and_kept_while_the_gateway_is_away() -> None:
    now = [0.0]
    listing = Listing([ESCALATED])
    seen = SeenRoutes(listing, refresh=10, clock=lambda: now[0])
    assert ("triage", "escalate") in seen.steps()
    reads = listing.reads
    now[0] = 5
    seen.steps()
    assert listing.reads == reads, "no read within the refresh"
    listing.down, now[0] = True, 20
    assert ("triage", "escalate") in seen.steps()


def test_a_step_seen_stays_when_its_tasks_are_no_longer_the_newest() -> None:
    """A burst of other tasks pushes the escalated one out of the newest read: its step stays drawn."""
    now = [0.0]
    listing = Listing([ESCALATED])
    seen = SeenRoutes(listing, refresh=10, clock=lambda: now[0])
    assert ("triage", "escalate") in seen.steps()
    listing.tasks_listed, now[0] = [{"status": "succeeded", "route": {"prev": ["split"], "curr": "", "next": []}}], 20
    assert {("triage", "escalate"), ("split", SINK)} <= seen.steps()


def test_a_seen_step_is_a_dashed_edge_and_places_the_actor_it_reaches() -> None:
    topology = Topology.of_mesh(load_mesh(REVIEWS))
    drawn = layout(topology, steps_of(ESCALATED))
    place = {box.node.name: (box.x, box.y) for box in drawn.boxes}
    assert place["escalate"][0] > place["triage"][0], "after the actor whose handler sent it there"
    assert place["escalate"][1] > place[SUMP][1], "in the row below the flows"
    edges = {(edge.source, edge.target): edge for edge in drawn.edges}
    assert edges[("triage", "escalate")].seen
    assert edges[("escalate", SINK)].seen
    assert not edges[("split", "score")].seen, "a declared step is drawn once, as declared"
    assert [edge for edge in drawn.edges if edge.seen] == [edges[("escalate", SINK)], edges[("triage", "escalate")]]
    right = max(float(x) for x in re.findall(r"([\d.]+),", edges[("escalate", SINK)].path))
    assert drawn.width > right >= place["escalate"][0] + NODE_WIDTH, "the step round its right side fits"
    unseen = layout(topology)
    assert not any(edge.seen for edge in unseen.edges)
    assert {box.node.name: (box.x, box.y) for box in unseen.boxes} == place, "no actor moves when a step is seen"
    assert place["escalate"][0] == place[SUMP][0], "under x-sump before any step reaches it, as after"


def test_the_mesh_page_draws_the_seen_step_with_a_legend() -> None:
    gateway = FakeGateway()
    gateway.known["b1"] = ESCALATED
    console = app.Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here")  # type: ignore[arg-type]
    page = console_client(console).get("/").get_data(as_text=True)
    assert '<path class="edge seen"' in page
    assert 'data-source="triage" data-target="escalate"' in page
    assert "a step tasks took that no flow declares" in page
