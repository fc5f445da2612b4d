"""`asya demo`'s ending counts tasks and envelopes apart, and says where each envelope ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from asya_cdk.loading import load_mesh
from asya_local import demo_report
from tests.support.program_mesh import program_mesh

ROUTE = ["ingest", "clean", "enrich", "summarise"]


def _kept(
    envelope_id: str, prev: list[str], outcome: str = "succeeded", at: str = "", parent: str | None = None
) -> dict[str, Any]:
    """As x-sink keeps an envelope: `at`, the actor it is still at (a route x-sink got unshifted: one
    that failed there, or whose actor returned nothing for it); none for one that ran to the end."""
    route = {"prev": prev, "curr": at, "next": []}
    return {
        "key": f"results/n/{envelope_id}/{outcome}.json",
        "outcome": outcome,
        "envelope": {"id": envelope_id, "parent_id": parent, "route": route, "payload": {}},
    }


def test_envelopes_are_counted_once_each_by_where_they_ended() -> None:
    kept = [
        _kept("t1", ROUTE),
        _kept("t1-1", ROUTE, parent="t1"),
        _kept("t1-2", ["ingest"], at="clean", parent="t1"),  # a row the cleaning dropped: done there
        _kept("t2", ["ingest", "clean"], "failed", at="enrich"),
        _kept("t2", ["ingest", "clean"], "sump", at="enrich"),  # x-sump's copy, not an ending
    ]
    tasks = [{"id": "t1", "status": "succeeded"}, {"id": "t2", "status": "failed"}]
    assert demo_report.summary(tasks, kept, ROUTE) == [
        "2 inputs became 2 tasks: 1 failed, 1 succeeded.",
        "Their envelopes (a task fans out into several) ended 4 times: 2 after the last step (summarise); "
        "1 at clean, with no output there (dropped, done); 1 at enrich, failed.",
    ]


def test_the_results_table_says_dropped_of_an_envelope_that_ended_with_no_output_not_succeeded() -> None:
    console = Console(width=200, record=True)
    console.print(demo_report.results_table([_kept("t1-1", ROUTE), _kept("t1-2", ["ingest"], at="clean")]))
    rows = [line.split("│")[1:-1] for line in console.export_text().splitlines() if line.startswith("│")]
    assert [[cell.strip() for cell in row[2:4]] for row in rows] == [
        ["succeeded", "ingest clean enrich summarise"],
        ["dropped", "ingest clean"],
    ]


def test_the_tasks_table_shows_each_task_whole_with_its_branches() -> None:
    console = Console(width=200, record=True)
    task = {
        "id": "6d3f0c1e-2b7a-4d0e-9a51-0c2f4e8b7a11",
        "status": "succeeded",
        "branches": {"total": 3, "succeeded": 3},
    }
    console.print(demo_report.tasks_table([task]))
    shown = console.export_text()
    assert "6d3f0c1e-2b7a-4d0e-9a51-0c2f4e8b7a11" in shown
    assert "3 in all: 0 open, 3 succeeded, 0 failed, 0 canceled" in shown


def test_the_paths_table_shows_the_way_a_flow_program_took_each_task_and_its_hops() -> None:
    console = Console(width=200, record=True)
    kept = [
        _kept("t1", ["classify", "draft", "evaluate"]),
        _kept("t2", ["classify", "classify-large", "draft", "evaluate", "refine", "evaluate"]),
        {**_kept("t2", ["classify"], "sump"), "outcome": "sump"},  # a copy, not where the task ended
    ]
    tasks = [
        {"id": "t1", "status": "succeeded", "input": {"customer": "Ada"}},
        {"id": "t2", "status": "succeeded", "input": {"customer": "Lin"}},
    ]
    console.print(demo_report.paths_table(tasks, kept))
    rows = [line.split("│")[1:-1] for line in console.export_text().splitlines() if line.startswith("│")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["t1", "customer=Ada", "succeeded", "3", "classify → draft → evaluate"],
        ["t2", "customer=Lin", "succeeded", "6", "classify → classify-large → draft → evaluate → refine → evaluate"],
    ]


def test_a_program_flow_is_named_by_its_shortest_way_and_its_ending_counted_on_it(tmp_path: Path) -> None:
    """A program flow's route in the mesh file is empty: the demo says the shortest way through its
    program instead, and counts where envelopes ended against that way."""
    mesh = load_mesh(program_mesh(tmp_path))
    assert demo_report.flow_words(mesh, "refining") == "a program, at its shortest draft"
    assert demo_report.flow_words(mesh, "straight") == "draft → publish"
    ended = [{"id": "t1", "status": "succeeded"}, {"id": "t2", "status": "succeeded"}]
    kept = [_kept("t1", ["draft"]), _kept("t2", ["draft", "fallback"])]
    lines = demo_report.summary(ended, kept, mesh.flow_route("refining"))
    assert lines[1] == "Their envelopes ended 2 times: 2 after the last step (draft or fallback).", "no task fanned out"


def test_the_demo_ends_with_the_next_step_a_mesh_that_keeps_running_and_its_console() -> None:
    lines = demo_report.next_step("examples/reviews/mesh.yaml", "examples/reviews/inputs.json", "triage-reviews")
    assert lines == [
        "next: `asya up --config examples/reviews/mesh.yaml` keeps this mesh running (Ctrl-C stops it)",
        "      and prints the URL of its console: the mesh live, and every task.",
        "      From another terminal, `asya send @examples/reviews/inputs.json --flow triage-reviews --each` sends it "
        "these inputs again.",
    ]
