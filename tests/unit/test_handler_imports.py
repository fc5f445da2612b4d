"""`asya check` imports each Lambda actor's handler where its local worker would (its code folder and
libraries, `python -S`), resolving it as the sidecar does, and names what is missing; an actor whose
libraries are not built on this machine is skipped, and said to be."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from asya_cdk.layer import layer_build
from asya_cdk.libraries import Target, install
from asya_cdk.loading import load_mesh
from asya_local.check import check
from asya_local.handler_imports import import_handlers
from asya_local.runtime import runtime_sdk_build

ACTORS = """
import os


def split(payload):
    return payload


class Model:
    def __init__(self):
        self.model = open(os.environ["MODEL_PATH"]).read()  # only the deployed environment has it

    def score(self, payload):
        return payload
"""


@pytest.fixture(autouse=True)
def _sidecar_libraries_built() -> None:
    """What `asya up` builds once per machine, and the check only looks for."""
    target = Target.this_machine()
    install(layer_build(target))
    install(runtime_sdk_build(target))


def _check(tmp_path: Path, actors: str) -> tuple[int, str]:
    (tmp_path / "actors.py").write_text(ACTORS)
    (tmp_path / "needs_yaml.py").write_text("import yaml\n\n\ndef fn(p):\n    return p\n")
    (tmp_path / "reads_env.py").write_text("import os\n\nKEY = os.environ['API_KEY']\n\n\ndef fn(p):\n    return p\n")
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(f"namespace: imports\nactors:\n{actors}")
    console = Console(record=True, width=300)
    code = check(mesh, console)
    return code, console.export_text()


def test_a_mistyped_handler_fails_the_check_naming_the_field_and_the_close_name(tmp_path: Path) -> None:
    code, out = _check(
        tmp_path,
        "  split: {handler: actors.splitt}\n"
        "  score: {handler: actors.Model.scroe}\n"
        "  parse: {handler: needs_yaml.fn}\n"
        "  fine: {handler: actors.split}\n",
    )
    assert code == 1
    assert "actors.split.handler: module 'actors' has no attribute 'splitt' (did you mean 'split'?)" in out
    assert "actors.score.handler: class 'actors.Model' has no attribute 'scroe' (did you mean 'score'?)" in out
    assert "actors.parse.handler: importing 'needs_yaml' failed: No module named 'yaml'" in out
    assert "actors.fine" not in out
    assert "passes every check" not in out


def test_class_handlers_are_resolved_without_creating_the_class_and_module_errors_only_warn(tmp_path: Path) -> None:
    """A class whose `__init__` reads a model path, and a module that reads a variable at import, may
    work where they are deployed: the names are checked, the rest is a warning."""
    code, out = _check(tmp_path, "  score: {handler: actors.Model.score}\n  call: {handler: reads_env.fn}\n")
    assert code == 0, out
    assert "actors.call.handler: importing 'reads_env' failed: KeyError: 'API_KEY' (on Lambda this fails" in out
    assert "passes every check" in out


def test_an_actor_whose_libraries_are_not_built_is_skipped_and_said_to_be(tmp_path: Path) -> None:
    """Only the import is looked at (the rest of the check would build the Lambda platform's libraries)."""
    (tmp_path / "mesh.yaml").write_text(
        "namespace: imports\nactors:\n  split: {handler: actors.splitt, requirements: [numpy==1.0.0]}\n"
    )
    findings = import_handlers(load_mesh(tmp_path / "mesh.yaml"))
    assert findings.problems == []
    assert findings.warnings == [
        "actors.split.handler: not imported to check it: its libraries are not built for this machine yet "
        "(`asya up` builds them once)"
    ]
