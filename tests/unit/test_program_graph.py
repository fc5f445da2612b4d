"""Seeing a flow program: the steps it can take, drawn on the mesh's graph with its decisions, loops and
`except`s marked (and never as steps "no flow declares"); a task of it drawn on its program's graph
with the steps it took counted; the program in words and as an SVG file that stands alone."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from asya.names import SINK
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_gateway.settings import Flow
from asya_local.console.app import Console
from asya_local.console.deployed import listed_flows
from asya_local.console.drawing import graph_svg
from asya_local.console.graph import layout
from asya_local.console.program_steps import program_steps
from asya_local.console.topology import Node, Topology
from asya_local.flow_text import program_lines
from tests.support.console_client import console_client
from tests.support.program_mesh import program_mesh
from tests.unit.test_console import FakeGateway, FixedStats

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def mesh(tmp_path: Path) -> LoadedMesh:
    return load_mesh(program_mesh(tmp_path))


def test_a_programs_steps_are_every_way_from_one_actor_to_the_next(mesh: LoadedMesh) -> None:
    steps = {(step.source, step.target, step.kind) for step in program_steps(mesh.programs["refining"])}
    assert steps == {
        (None, "draft", "next"),
        ("draft", "refine", "decision"),
        ("draft", "publish", "decision"),
        ("draft", SINK, "decision"),
        ("refine", "evaluate", "next"),
        ("refine", "fallback", "except"),
        ("evaluate", "refine", "loop"),
        ("evaluate", "publish", "decision"),
        ("evaluate", SINK, "decision"),
        ("evaluate", "fallback", "except"),
        ("fallback", SINK, "next"),
        ("publish", SINK, "next"),
    }
    by_pair = {(step.source, step.target): step.label for step in program_steps(mesh.programs["refining"])}
    assert by_pair["evaluate", "refine"] == "while p['score'] < 0.8 (at most 3 times)"
    assert by_pair["evaluate", "publish"] == "not (p['score'] < 0.8); p.get('publish', True)"


def test_the_mesh_graph_draws_a_programs_steps_marked_and_never_as_undeclared(mesh: LoadedMesh) -> None:
    topology = Topology.of_mesh(mesh)
    taken_by_tasks = {("draft", "refine"), ("refine", "evaluate"), ("evaluate", "refine"), ("evaluate", "publish")}
    drawn = layout(topology, taken_by_tasks)
    edges = {(edge.source, edge.target): edge for edge in drawn.edges}
    assert not [edge for edge in drawn.edges if edge.seen], "a step the program can take is declared"
    assert edges["evaluate", "refine"].kind == "loop"
    assert edges["draft", "refine"].kind == "decision"
    assert edges["refine", "fallback"].kind == "except"
    assert edges["refine", "evaluate"].kind == ""
    assert edges["refine", "evaluate"].flows == ("refining",)
    assert edges["draft", "publish"].flows == ("straight", "refining"), "one edge, both flows"
    x = {box.node.name: box.x for box in drawn.boxes}
    assert x["draft"] < x["refine"] < x["evaluate"] < x["publish"] < x[SINK], "the program reads left to right"
    assert x["evaluate"] < x["fallback"]


@pytest.fixture
def client(mesh: LoadedMesh) -> tuple[FlaskClient, FakeGateway]:
    gateway = FakeGateway()
    console = Console(Topology.of_mesh(mesh), FixedStats(), gateway, "here", refresh=0.01)  # type: ignore[arg-type]
    return console_client(console), gateway


def test_the_mesh_page_marks_a_programs_decisions_loops_and_excepts(client: tuple[FlaskClient, FakeGateway]) -> None:
    page = client[0].get("/").get_data(as_text=True)
    assert 'class="edge program kind-loop"' in page
    assert 'data-source="evaluate" data-target="refine" data-flows="refining">' in page
    assert "<title>while p[&#39;score&#39;] &lt; 0.8 (at most 3 times)</title>" in page, "its condition on hover"
    assert 'class="mark kind-except"' in page
    assert "round a loop again" in page, "the legend says what the marks mean"
    assert "taken by an except" in page
    assert "refining: a program, at its shortest draft" in page


def _program_task(version: str) -> dict[str, Any]:
    return {
        "id": "p1",
        "flow": "refining",
        "status": "running",
        "terminal": False,
        "program_version": version,
        "route": {"prev": ["draft", "refine", "evaluate", "refine", "evaluate"], "curr": "publish", "next": []},
    }


def test_a_program_tasks_page_draws_its_program_with_the_steps_it_took_counted(
    client: tuple[FlaskClient, FakeGateway], mesh: LoadedMesh
) -> None:
    browser, gateway = client
    gateway.known["p1"] = _program_task(mesh.programs["refining"]["version"])
    page = browser.get("/tasks/p1").get_data(as_text=True)
    assert 'data-program="true"' in page
    assert 'data-flows="straight' not in page, "the program alone, not the route flow beside it"
    taken = _taken(page)
    assert (taken["refine", "evaluate"], taken["evaluate", "refine"]) == (2, 1), "round the loop, counted"
    assert (taken["draft", "refine"], taken["evaluate", "publish"]) == (1, 1)
    assert (taken["draft", "publish"], taken["refine", "fallback"]) == (0, 0), "not taken"
    assert "\u00d72" in page, "a step taken twice (round the loop) says so"
    assert "started under version" not in page


def _taken(page: str) -> dict[tuple[str, str], int]:
    """Each drawn edge's times taken, as the page marks it."""
    found = {}
    for edge in page.split("<path")[1:]:
        if "data-taken=" not in edge:
            continue
        source, target, times = (_attribute(edge, name) for name in ("data-source", "data-target", "data-taken"))
        found[source, target] = int(times)
    return found


def _attribute(tag: str, name: str) -> str:
    return tag.split(f'{name}="')[1].split('"', maxsplit=1)[0]


def test_a_task_of_another_program_version_says_so(client: tuple[FlaskClient, FakeGateway]) -> None:
    browser, gateway = client
    gateway.known["p1"] = _program_task("0123456789ab")
    page = browser.get("/tasks/p1").get_data(as_text=True)
    assert "started under version <code>0123456789ab</code> of the program" in page


def test_a_route_tasks_page_draws_its_flows_actors_not_the_programs(client: tuple[FlaskClient, FakeGateway]) -> None:
    browser, gateway = client
    route = {"prev": ["draft"], "curr": "publish", "next": []}
    gateway.known["r1"] = {"id": "r1", "flow": "straight", "status": "running", "route": route}
    page = browser.get("/tasks/r1").get_data(as_text=True)
    assert "data-program" not in page
    assert 'data-actor="publish"' in page
    assert 'data-actor="refine"' not in page, "an actor only the program calls: the task cannot reach it"


def test_the_program_in_words_says_each_line_decision_and_loop(mesh: LoadedMesh) -> None:
    assert program_lines(mesh.programs["refining"]) == [
        "   line 2  call draft  → the loop at line 4",
        "   line 4  while p['score'] < 0.8 (at most 3 times)  yes → refine (line 5); no → the decision at line 10",
        "   line 5    call refine  → evaluate (line 6); on ValueError → fallback (line 8)",
        "   line 6    call evaluate  → the loop at line 4; on ValueError → fallback (line 8)",
        "   line 8  call fallback  → return (line 9)",
        "   line 9  return  → x-sink",
        "  line 10  if p.get('publish', True)  yes → publish (line 11); no → return (line 12)",
        "  line 11  call publish  → return (line 12)",
        "  line 12  return  → x-sink",
    ]


def test_the_drawing_stands_alone_as_an_svg_file(mesh: LoadedMesh) -> None:
    topology = Topology.of_mesh(mesh).program_of("refining")
    root = ET.fromstring(graph_svg(layout(topology), "The steps of flow refining's program"))
    assert root.tag == f"{SVG}svg"
    title, style = root.find(f"{SVG}title"), root.find(f"{SVG}style")
    assert title is not None
    assert title.text == "The steps of flow refining's program"
    assert style is not None
    assert "--bg" in (style.text or ""), "its colours inside it"
    assert not root.findall(f".//{SVG}a"), "no links to a console that is not there"
    actors = {node.get("data-actor") for node in root.iter(f"{SVG}g") if node.get("data-actor")}
    assert actors == {"draft", "refine", "evaluate", "fallback", "publish", SINK, "x-sump"}
    marks = [node.get("class") for node in root.iter(f"{SVG}g") if "mark" in (node.get("class") or "")]
    assert "mark kind-loop" in marks
    assert "mark kind-except" in marks


def test_a_step_that_skips_actors_of_its_row_arcs_over_them_not_through(mesh: LoadedMesh) -> None:
    drawn = layout(Topology.of_mesh(mesh).program_of("refining"))
    boxes = {box.node.name: box for box in drawn.boxes}
    edges = {(edge.source, edge.target): edge for edge in drawn.edges}
    assert boxes["draft"].y == boxes["evaluate"].y == boxes["publish"].y, "one row"
    over = [edges["draft", "publish"].middle, edges["draft", SINK].middle, edges["evaluate", SINK].middle]
    assert all(middle is not None and 0 < middle[1] < boxes["refine"].y for middle in over), over
    assert len({middle[1] for middle in over if middle}) == 3, "arcs that skip more rise higher: their marks part"


def test_a_deployed_mesh_draws_its_programs_from_the_gateways_listing(mesh: LoadedMesh) -> None:
    """On AWS the console reads the flows from `GET /flows` (the gateway's `Flow.public`): a program
    flow's steps are drawn from the program listed there, as from the mesh file."""
    listed = {
        name: Flow(name=name, route=mesh.flow_route(name), program=mesh.programs.get(name)).public()
        for name in mesh.config.flows
    }
    routes, programs = listed_flows(listed)
    assert routes == {"straight": ["draft", "publish"], "refining": ["draft"]}
    nodes = [Node(name, "lambda") for name in mesh.config.actors]
    deployed = layout(Topology.of("shown", nodes, routes, programs))
    local = layout(Topology.of_mesh(mesh))
    assert {(e.source, e.target, e.kind) for e in deployed.edges} == {(e.source, e.target, e.kind) for e in local.edges}


def test_a_programs_graph_says_where_it_calls_each_actor(mesh: LoadedMesh) -> None:
    drawn = layout(Topology.of_mesh(mesh).program_of("refining"))
    notes = {box.node.name: box.node.note for box in drawn.boxes}
    assert notes == {
        "draft": "line 2",
        "refine": "line 5",
        "evaluate": "line 6",
        "fallback": "line 8",
        "publish": "line 11",
        SINK: None,
        "x-sump": None,
    }
    drawing = graph_svg(drawn, "refining")
    assert '<text class="stat called" x="10" y="42">line 5</text>' in drawing


def test_a_loop_entered_after_its_first_actor_keeps_the_graph_narrow() -> None:
    """`evaluate` before the loop, then `while …: refine; evaluate`: the steps evaluate → refine →
    evaluate close a cycle no step marks as the loop's; each actor still gets one column after the
    last, not one per round of a longest path that goes round the cycle."""
    mesh = load_mesh(Path(__file__).resolve().parents[2] / "examples" / "answers" / "mesh.yaml")
    boxes = {box.node.name: box for box in layout(Topology.of_mesh(mesh).program_of("answer")).boxes}
    order = ["classify", "classify-large", "x-pause", "draft", "draft-long", "evaluate", "refine"]
    xs = [boxes[name].x for name in order]
    assert xs == sorted(xs)
    gaps = {later - earlier for earlier, later in pairwise(xs)}
    assert len(gaps) == 1, f"one column apart each: {xs}"
