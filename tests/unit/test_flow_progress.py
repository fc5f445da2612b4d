"""A flow program's progress never goes down (docs/flows.md, "Progress"): a loop going round again finds
more ahead than the shortest way said, and the task's reports hold where they were until it passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from asya.abi import Frame
from asya.envelope import parse_envelope
from asya.flows import continue_flow, progress_floor, start
from asya.reporting import StatusReporter
from asya.task_record import progress_of
from asya_cdk.flow_compiler import compile_flow

PROGRAM = """
def refining(p):
    p = draft(p)
    while bounded(p["score"] < 0.8, max_iterations=5):
        p = refine(p)
        p = evaluate(p)
    return p
"""


def _program(tmp_path: Path) -> dict[str, Any]:
    source = tmp_path / "flows.py"
    source.write_text(PROGRAM)
    actors: dict[str, Any] = {"draft": {}, "refine": {}, "evaluate": {}}
    return compile_flow(source, "refining", source="flows.py", actors=actors, joins={})


def _claims(tmp_path: Path, scores: list[float]) -> list[tuple[float, float]]:
    """What each hop's claim reports as the task goes draft, then refine and evaluate with each score in
    turn: (its progress, what its route alone would say)."""
    route, header, _ = start(_program(tmp_path), {"score": 0.0})
    wire: dict[str, Any] = {
        "id": "t-1",
        "route": {"prev": [], "curr": route[0], "next": route[1:]},
        "headers": {"x-asya-flow": header},
        "payload": {"score": 0.0},
    }
    reported = []
    for score in scores:
        envelope = parse_envelope(orjson.dumps(wire))
        report = StatusReporter._report_for(
            envelope.id,
            parent_id=None,
            root_id=envelope.id,
            actor=envelope.route.curr,
            route=wire["route"],
            phase="processing",
            attempt=1,
            floor=progress_floor(envelope.headers),
        )
        reported.append((report.progress, progress_of(wire["route"])))
        (output,) = continue_flow(envelope, [Frame({"score": score}, list(envelope.route.next), envelope.headers, {})])
        if not output.next:
            break
        prev = [*envelope.route.prev, envelope.route.curr]
        wire = {**wire, "route": {"prev": prev, "curr": output.next[0], "next": output.next[1:]}}
        wire["headers"], wire["payload"] = output.headers, output.payload
    return reported


def test_a_loop_going_round_again_holds_the_progress_it_reported(tmp_path: Path) -> None:
    # draft, refine, evaluate (0.5: again), refine, evaluate (0.5: again), refine, evaluate (0.9: done)
    reported = [progress for progress, _ in _claims(tmp_path, [0.0, 0.5, 0.5, 0.5, 0.5, 0.9, 0.9])]
    assert reported == sorted(reported), reported
    assert reported[2] == 66.67  # evaluate, with nothing left on the shortest way but evaluate itself
    assert reported[3] == 66.67  # round again: 3 done of 5 would be 60 %
    assert reported[-1] < 100


def test_the_route_alone_would_go_down(tmp_path: Path) -> None:
    """What the floor is for: the routes' own ratios fall when the loop goes round."""
    by_route = [alone for _, alone in _claims(tmp_path, [0.0, 0.5, 0.5, 0.9])]
    assert by_route[2] > by_route[3]
    assert progress_floor({"x-asya-flow": {"floor": True}}) == 0.0
