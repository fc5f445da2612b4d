"""`asya flow show`: from the mesh file alone, a route flow's route, a program flow's program in words
with its drawing written as an SVG file (where it was written said), and an unknown flow refused with
the flows there are."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from asya_local import cli
from tests.support.program_mesh import program_mesh


def test_a_program_flow_is_shown_in_words_and_drawn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mesh = program_mesh(tmp_path)
    image = tmp_path / "out" / "refining.svg"
    assert cli.main(["flow", "show", "refining", "--config", str(mesh), "--image", str(image)]) == 0
    shown = capsys.readouterr().out
    assert "flow refining: program programs.refining (programs.py), version " in shown
    assert "at its shortest: draft → x-sink" in shown
    assert "line 4  while p['score'] < 0.8 (at most 3 times)  yes → refine (line 5)" in shown
    assert "line 5    call refine  → evaluate (line 6); on ValueError → fallback (line 8)" in shown
    assert "evaluate → refine [loop]: while p['score'] < 0.8 (at most 3 times)" in shown
    assert f"drawing written to {image}" in shown
    drawn = ET.parse(image).getroot()
    assert {node.get("data-actor") for node in drawn.iter() if node.get("data-actor")} >= {"draft", "publish"}


def test_the_drawing_goes_beside_the_mesh_file_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mesh = program_mesh(tmp_path)
    assert cli.main(["flow", "show", "refining", "--config", str(mesh)]) == 0
    assert (tmp_path / ".asya" / "flows" / "refining.svg").is_file()
    assert f"drawing written to {tmp_path / '.asya' / 'flows' / 'refining.svg'}" in capsys.readouterr().out


def test_a_route_flow_is_its_route(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mesh = program_mesh(tmp_path)
    assert cli.main(["flow", "show", "straight", "--config", str(mesh)]) == 0
    assert capsys.readouterr().out.strip() == "flow straight: route draft → publish → x-sink"
    assert not (tmp_path / ".asya").exists(), "nothing to draw for a route"


def test_an_unknown_flow_lists_the_flows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mesh = program_mesh(tmp_path)
    assert cli.main(["flow", "show", "refinning", "--config", str(mesh)]) == 1
    shown = capsys.readouterr().out
    assert "no flow 'refinning'" in shown
    assert "did you mean `refining`?" in shown
    assert "  straight\n  refining" in shown


def test_an_edit_is_shown_as_a_step_of_the_program_and_not_as_a_step_between_actors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mesh = program_mesh(tmp_path)
    with (tmp_path / "programs.py").open("a") as programs:
        programs.write('\n\ndef labelled(p):\n    p = draft(p)\n    p["tries"] += 1\n    return publish(p)\n')
    mesh.write_text(mesh.read_text() + "  labelled: {program: programs.labelled}\n")
    assert cli.main(["flow", "show", "labelled", "--config", str(mesh), "--image", str(tmp_path / "l.svg")]) == 0
    shown = capsys.readouterr().out
    assert "line 16  call draft  → the edit at line 17" in shown
    assert "line 17  edit p['tries'] += 1  → publish (line 18)" in shown
    assert "  draft → publish\n" in shown, "an edit is no hop: draft's output goes straight on to publish"


def test_a_map_is_shown_with_its_actor_and_the_join_the_mesh_adds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mesh = program_mesh(tmp_path)
    with (tmp_path / "programs.py").open("a") as programs:
        programs.write(
            '\n\ndef mapped(p):\n    p = draft(p)\n    p["r"] = map(refine, p["items"])\n    return publish(p)\n'
        )
    mesh.write_text(mesh.read_text() + "  mapped: {program: programs.mapped}\n")
    assert cli.main(["flow", "show", "mapped", "--config", str(mesh), "--image", str(tmp_path / "m.svg")]) == 0
    shown = capsys.readouterr().out
    assert "at its shortest: draft → flow-gather → publish → x-sink" in shown
    assert "line 17  map p['r'] = map(refine, p['items'])  each item → refine, gathered at flow-gather" in shown
    assert "line 17  the map's outputs into the payload  → publish (line 18)" in shown
    assert "  draft → refine [parallel]\n" in shown
    assert "  refine → flow-gather\n" in shown
