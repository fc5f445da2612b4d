"""Maps in flow programs (`p["r"] = [a(x) for x in p["items"]]`, docs/flows.md) at the hop: the actor
before a map sends one envelope per item to the mapped actor and one carrying its output to the mesh's
gather, all framed as one fan for it; the gather's hop puts the outputs, in item order, into the payload
and the program goes on, with no hop of its own beyond it. The mesh adds the gather itself, a join of
the actors maps follow."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asya.flow_expressions import FlowError
from asya.flow_program import Fan, Program
from asya.headers import FLOW_HEADER, JOIN_HEADER, JOINED_HEADER
from asya_cdk.flow_maps import GATHER, GATHER_MEMORY_MB
from asya_cdk.loading import MeshConfigError, load_mesh
from tests.support.flow_hops import arriving, sent
from tests.support.flow_programs import compiled

SQUARES = """
def flow(p):
    p = draft(p)
    p["squares"] = [refine(x) for x in p["items"]]
    p["count"] = len(p["squares"])
    return accept(p)
"""
SOURCE_ENV = {"ASYA_JOINED_BY": GATHER}


def _program(tmp_path: Path) -> dict[str, Any]:
    return compiled(tmp_path, SQUARES, actors=("draft", "refine", "accept", GATHER))


def _calls(program: Mapping[str, Any], actor: str) -> int:
    return next(index for index, node in enumerate(program["nodes"]) if node.get("call") == actor)


def test_the_actor_before_a_map_fans_out_one_branch_per_item_and_one_carrying_the_payload(tmp_path: Path) -> None:
    program = _program(tmp_path)
    document = arriving(program, {"items": []}, "draft")
    out = sent("draft", lambda _: {"items": [1, 2, 3], "drafted": True}, document, **SOURCE_ENV)
    assert [to.endswith(GATHER) for to, _ in out] == [True, False, False, False]
    assert all(to.endswith("refine") for to, _ in out[1:])
    carried, *items = (envelope for _, envelope in out)
    assert carried["payload"] == {"items": [1, 2, 3], "drafted": True}
    assert carried["route"] == {"prev": ["draft"], "curr": GATHER, "next": ["accept"]}
    assert [item["payload"] for item in items] == [1, 2, 3]
    assert all(item["route"] == {"prev": ["draft"], "curr": "refine", "next": [GATHER, "accept"]} for item in items)
    frames = [envelope["headers"][JOIN_HEADER][-1] for _, envelope in out]
    assert [(frame["join"], frame["slot"], frame["width"]) for frame in frames] == [(GATHER, n, 4) for n in range(4)]
    assert {frame["into"] for frame in frames} == {document["id"]}, "the joined envelope goes on as the task"
    assert all(envelope["headers"][FLOW_HEADER]["program"] == program for _, envelope in out)


def test_an_item_goes_from_the_mapped_actor_to_the_gather(tmp_path: Path) -> None:
    program = _program(tmp_path)
    document = arriving(program, {"items": []}, "draft")
    _, first, _ = (envelope for _, envelope in sent("draft", lambda _: {"items": [4, 5]}, document, **SOURCE_ENV))
    [(to, out)] = sent("refine", lambda x: x * x, first, **SOURCE_ENV)  # refine may precede a map elsewhere
    assert to.endswith(GATHER)
    assert out["payload"] == 16
    assert out["headers"][JOIN_HEADER] == first["headers"][JOIN_HEADER], "still the fan's branch, no fan of its own"


def test_a_mapped_actor_giving_several_outputs_for_an_item_fails_its_branch(tmp_path: Path) -> None:
    """An item has one place in the list: a second output would arrive in the same slot and the join
    would keep one of them (and the task would wait for the other's record): the branch fails instead,
    and with it the map (`fail_fast`)."""
    program = _program(tmp_path)
    document = arriving(program, {"items": []}, "draft")
    _, first, _ = (envelope for _, envelope in sent("draft", lambda _: {"items": [4, 5]}, document, **SOURCE_ENV))

    def twice(x: Any) -> Any:
        yield x * x
        yield -x

    [(to, failed)] = sent("refine", twice, first)
    assert to.endswith("x-sink")
    assert (failed["status"]["phase"], failed["status"]["reason"]) == ("failed", "FlowError")
    assert "a branch gives its join one output: refine gave 2" in failed["payload"]["details"]["message"]
    assert failed["headers"][JOIN_HEADER] == first["headers"][JOIN_HEADER], "x-sink sends its ending to the join"


def test_the_gathers_hop_puts_the_outputs_in_the_payload_and_goes_on(tmp_path: Path) -> None:
    program = _program(tmp_path)
    joined = arriving(program, {"items": []}, GATHER, done=1)
    joined["payload"] = [{"items": [4, 5], "drafted": True}, 16, 25]
    joined["headers"][JOINED_HEADER] = {"fan": "f", "width": 3, "failed": []}
    [(to, out)] = sent(GATHER, lambda branches: branches, joined)
    assert to.endswith("accept")
    assert out["payload"] == {"items": [4, 5], "drafted": True, "squares": [16, 25], "count": 2}
    assert out["route"] == {"prev": ["done-0", GATHER], "curr": "accept", "next": []}


def test_an_empty_list_sends_the_payload_alone_and_the_map_gives_an_empty_list(tmp_path: Path) -> None:
    program = _program(tmp_path)
    document = arriving(program, {"items": []}, "draft")
    [(to, carried)] = sent("draft", lambda _: {"items": []}, document, **SOURCE_ENV)
    assert to.endswith(GATHER)
    assert JOIN_HEADER not in carried["headers"], "a join of one: the gather takes it as it comes"
    step = Program(program).advance(Program(program).after(_calls(program, GATHER)), [carried["payload"]], {})
    assert step.payload == {"items": [], "squares": [], "count": 0}


def test_a_map_over_what_is_not_a_list_fails_the_task_naming_the_line(tmp_path: Path) -> None:
    program = _program(tmp_path)
    document = arriving(program, {"items": []}, "draft")
    [(to, failed)] = sent("draft", lambda _: {"items": "abc"}, document, **SOURCE_ENV)
    assert to.endswith("x-sink")
    assert (failed["status"]["phase"], failed["status"]["reason"]) == ("failed", "FlowError")
    message = failed["payload"]["details"]["message"]
    assert (
        "flows.py line 4: p['squares'] = [refine(x) for x in p['items']]: a map goes over a list, not a str" in message
    )


def test_a_map_of_more_items_than_a_decision_has_steps_fails_before_making_its_branches(tmp_path: Path) -> None:
    """Each item is a branch the sidecar makes: a million would take seconds and memory before the
    fan-out's own bound (`FanOutTooWide`) is checked, so a map spends a step of the decision an item."""
    program = Program(_program(tmp_path))
    after_draft = program.after(_calls(program.document, "draft"))
    wide = r"line 4: p\['squares'\] = .*: a map of 200,001 items is over the 200,000 steps of one decision"
    with pytest.raises(FlowError, match=wide):
        program.advance(after_draft, {"items": [0] * 200_001}, {})
    fan = program.advance(after_draft, {"items": [0] * 2_000}, {})
    assert isinstance(fan, Fan)
    assert len(fan.branches) == 2_001


def test_a_map_after_several_outputs_of_one_hop_is_refused(tmp_path: Path) -> None:
    program = _program(tmp_path)
    document = arriving(program, {"items": []}, "draft")

    def twice(p: Any) -> Any:
        yield {"items": [1]}
        yield {"items": [2]}

    [(to, failed)] = sent("draft", twice, document, **SOURCE_ENV)
    assert to.endswith("x-sink")
    assert "a map follows one output of an actor: draft gave 2" in failed["payload"]["details"]["message"]


def test_the_gather_refuses_what_is_not_a_map_join(tmp_path: Path) -> None:
    program = Program(_program(tmp_path))
    refused = r"flows.py line 4: p\['squares'\] = .*: a map's join gives a list, the payload first, not dict"
    with pytest.raises(FlowError, match=refused):
        program.advance(program.after(_calls(program.document, GATHER)), {"not": "a list"}, {})


MESH = """namespace: mapped
actors:
  draft: {handler: actors.draft}
  refine: {handler: actors.refine}
  accept: {handler: actors.accept}
flows:
  squares: {program: programs.flow}
  plain: {route: [draft, accept]}
"""


def test_the_mesh_adds_the_gather_as_a_join_of_the_actors_maps_follow(tmp_path: Path) -> None:
    (tmp_path / "programs.py").write_text(SQUARES)
    (tmp_path / "actors.py").write_text("")
    (tmp_path / "mesh.yaml").write_text(MESH)
    mesh = load_mesh(tmp_path / "mesh.yaml")
    gather = mesh.config.actors[GATHER]
    assert gather.join is not None
    assert gather.join.branches_of == ["draft"]
    assert gather.join.on_failure == "fail_fast", "a failed item fails the task"
    assert gather.memory == GATHER_MEMORY_MB
    assert gather.join.max_width is not None
    assert 2_000 < gather.join.max_width < 2_200
    assert mesh.config.joins_of("draft") == [GATHER]
    assert mesh.flow_route("squares") == ["draft", GATHER, "accept"]


def test_a_mesh_without_maps_has_no_gather_and_an_actor_of_its_name_is_refused_when_one_maps(tmp_path: Path) -> None:
    (tmp_path / "programs.py").write_text(SQUARES)
    (tmp_path / "actors.py").write_text("")
    (tmp_path / "mesh.yaml").write_text(MESH.replace("  squares: {program: programs.flow}\n", ""))
    assert GATHER not in load_mesh(tmp_path / "mesh.yaml").config.actors
    (tmp_path / "mesh.yaml").write_text(MESH.replace("actors:\n", f"actors:\n  {GATHER}: {{handler: actors.x}}\n"))
    with pytest.raises(MeshConfigError, match=f"actors.{GATHER}: the name of the join the mesh adds for maps"):
        load_mesh(tmp_path / "mesh.yaml")


def test_the_gathers_widest_fan_is_what_its_memory_holds_within_what_its_timeout_reads(tmp_path: Path) -> None:
    (tmp_path / "programs.py").write_text(SQUARES)
    (tmp_path / "actors.py").write_text("")
    (tmp_path / "mesh.yaml").write_text(MESH + "payloads:\n  claim_check_bytes: 1024\n")
    gather = load_mesh(tmp_path / "mesh.yaml").config.actors[GATHER]
    assert gather.join is not None
    assert gather.join.max_width == 10_000, "small branches: the timeout's bound, not memory's"


TWICE = """
def flow(p):
    p = draft(p)
    p["a"] = map(refine, p["items"])
    p["b"] = map(accept, p["a"])
    return p
"""


def test_a_map_right_after_a_map_fans_out_from_the_gathers_hop(tmp_path: Path) -> None:
    program = compiled(tmp_path, TWICE, actors=("draft", "refine", "accept", GATHER))
    joined = arriving(program, {"items": []}, GATHER, done=1)
    first = next(node for node in program["nodes"] if node.get("src", "").startswith("p['a']") and "map" in node)
    joined["headers"][FLOW_HEADER]["at"] = first["gather"]
    joined["payload"] = [{"items": [1, 2]}, 10, 20]
    joined["headers"][JOINED_HEADER] = {"fan": "f", "width": 3, "failed": []}
    out = [envelope for _, envelope in sent(GATHER, lambda branches: branches, joined, **SOURCE_ENV)]
    assert [envelope["payload"] for envelope in out] == [{"items": [1, 2], "a": [10, 20]}, 10, 20]
    assert [envelope["route"]["curr"] for envelope in out] == [GATHER, "accept", "accept"]
    assert [[frame["slot"] for frame in envelope["headers"][JOIN_HEADER]] for envelope in out] == [[0], [1], [2]]
    assert all(JOINED_HEADER not in envelope["headers"] for envelope in out), "the next arrivals are gathered"
