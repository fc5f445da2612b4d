"""The mesh file's JSON Schema (`asya schema`) and its version: the schema is valid JSON Schema, takes
every mesh file the repository ships and the one `asya init` writes, and refuses what the model
refuses field by field; a file of a newer version than this release reads is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # the reference validator; with mcp, a dev dependency
import pytest
import yaml

from asya_cdk.config import JSON_SCHEMA_DIALECT, MESH_VERSION, mesh_schema
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_local.cli import main
from asya_local.init_cli import init_project

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/*/mesh.yaml"))
ACTORS = {"namespace": "shop", "actors": {"a": {"handler": "mod.fn", "timeout": "30s"}}}


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(mesh_schema())


def test_the_schema_is_json_schema_with_its_dialect_and_title() -> None:
    schema = mesh_schema()
    assert schema["$schema"] == JSON_SCHEMA_DIALECT
    assert schema["title"] == f"asya-aws mesh file, version {MESH_VERSION}"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.parent.name for path in EXAMPLES])
def test_every_example_mesh_matches(path: Path) -> None:
    _validator().validate(yaml.safe_load(path.read_text()))


def test_the_project_asya_init_writes_matches_its_schema(tmp_path: Path) -> None:
    init_project(tmp_path / "orders", "orders")
    text = (tmp_path / "orders" / "mesh.yaml").read_text()
    schema = json.loads((tmp_path / "orders" / "mesh.schema.json").read_text())
    assert text.splitlines()[0] == "# yaml-language-server: $schema=./mesh.schema.json"
    assert schema == mesh_schema()
    document = yaml.safe_load(text)
    assert document["version"] == MESH_VERSION
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"colour": "blue"}, "colour"),  # an unknown field
        ({"actors": {"a": {"handler": "mod.fn", "memory": "lots"}}}, "memory"),  # a wrong type
        ({"actors": {"a": {"handler": "mod.fn", "timeout": "soon"}}}, "timeout"),  # not a duration
        ({"version": MESH_VERSION + 1}, "version"),  # a format this release does not know
        ({"actors": {"a": {"handler": "mod.fn", "retention": 30}}}, "retention"),  # under its 60 s
    ],
)
def test_what_the_model_refuses_the_schema_refuses(change: dict[str, Any], field: str) -> None:
    errors = list(_validator().iter_errors({**ACTORS, **change}))
    assert errors, f"the schema took {change}"
    assert any(field in json.dumps(list(error.path)) + error.message for error in errors)


def test_asya_schema_prints_it_or_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == mesh_schema()
    assert main(["schema", "--output", str(tmp_path / "mesh.schema.json")]) == 0
    assert (tmp_path / "mesh.schema.json").read_text() == printed


def _mesh(tmp_path: Path, version: int | None) -> Path:
    (tmp_path / "mod.py").write_text("def fn(payload):\n    return payload\n")
    document = {**ACTORS, **({} if version is None else {"version": version})}
    path = tmp_path / "mesh.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize("version", [None, 1])
def test_a_file_without_a_version_is_version_1(tmp_path: Path, version: int | None) -> None:
    assert load_mesh(_mesh(tmp_path, version)).config.version == 1


def test_a_newer_file_is_refused_in_one_line_naming_both_versions(tmp_path: Path) -> None:
    path = _mesh(tmp_path, MESH_VERSION + 1)
    with pytest.raises(MeshConfigError) as raised:
        load_mesh(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: version: mesh file version {MESH_VERSION + 1} is newer than this asya-aws (")
    assert message.endswith(f"reads (up to version {MESH_VERSION}); upgrade asya-aws")
