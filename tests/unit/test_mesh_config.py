"""Mesh file validation: every error names the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from asya_cdk.loading import MeshConfigError, load_mesh

GOOD = """
namespace: shop
actors:
  a: {handler: mod.fn}
  b: {handler: mod.Cls.method, timeout: 30s, batch_size: 100, batching_window: 2s}
flows:
  main: {route: [a, b], timeout: 5m}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mesh.yaml"
    path.write_text(text)
    return path


def test_a_good_mesh_loads_with_defaults_and_derived_timeouts(tmp_path: Path) -> None:
    mesh = load_mesh(_write(tmp_path, GOOD))
    b = mesh.config.actors["b"]
    assert (b.timeout, b.batch_size, b.batching_window) == (30.0, 100, 2.0)
    assert b.lambda_timeout == 310.0
    assert b.visibility_timeout == 1860.0
    assert mesh.config.flows["main"].timeout == 300.0
    assert mesh.code_dir("a") == tmp_path
    variables = mesh.actor_environment("a", {"idempotency_table": "t"})
    assert variables["ASYA_HANDLER"] == "mod.fn"
    assert variables["ASYA_IDEMPOTENCY_TABLE"] == "t"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "namespace: shop\nactors:\n  a: {handler: mod.fn, colour: red}\n",
            "actors.a.colour: not a field",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: nodot}\n",
            "actors.a.handler: must be 'module.function'",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f}\nflows:\n  f: {route: [a, ghost]}\n",
            "flows.f.route[1]: unknown actor 'ghost'",
        ),
        ("namespace: Shop!\nactors:\n  a: {handler: m.f}\n", "namespace: String should match pattern"),
        ("namespace: shop\nactors: {}\n", "actors: Dictionary should have at least 1 item"),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f, timeout: 1000}\n",
            "actors.a: timeout: 1000 s is above Lambda's 900; a longer hop needs runtime: container",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f, batch_size: 50}\n",
            "batch_size above 10 needs a batching_window",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f, environment: {ASYA_HANDLER: x}}\n",
            "ASYA_HANDLER are set by the mesh",
        ),
        ("namespace: shop\nactors:\n  x-sink: {handler: m.f}\n", "actors.x-sink: actor names are"),
        (
            "namespace: shop\nactors:\n  a:\n    handler: m.f\n"
            "    resiliency: {policies: {default: {on_exhausted: [zz]}}}\n",
            "actors.a.resiliency.policies.default.on_exhausted: unknown actor 'zz'",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f, code: nowhere}\n",
            "actors.a.code: 'nowhere' is not a directory",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f}\nflows:\n  f:\n    route: [a]\n"
            "    input_schema: {properties: {n: {type: integer}}, examples: [{n: 1}, {n: two}]}\n",
            "flows.f.input_schema: examples[1] does not match the schema: data.n must be integer",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: m.f}\nflows:\n  f:\n    route: [a]\n"
            "    input_schema: {type: thing}\n",
            "flows.f.input_schema: not a valid JSON Schema",
        ),
        ("namespace: shop\nactors: [\n", "not valid YAML"),
        ("- just\n- a list\n", "the mesh must be a mapping"),
    ],
)
def test_bad_mesh_files_name_the_file_and_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert fragment in str(caught.value)


def test_a_yaml_mistake_names_the_file_at_each_position(tmp_path: Path) -> None:
    path = _write(tmp_path, "namespace: shop\nactors:\n  a:\n    handler: m.f\n   code: .\n")
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    assert f'in "{path}", line 5' in str(caught.value)
    assert "<unicode string>" not in str(caught.value)


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(MeshConfigError, match="cannot read"):
        load_mesh(tmp_path / "absent.yaml")


def test_the_example_mesh_is_valid() -> None:
    mesh = load_mesh(Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml")
    assert mesh.config.flows["triage-reviews"].route == ["split", "score", "triage"]


@pytest.mark.parametrize("example", ["catalogue", "reviews"])
def test_every_flow_of_the_examples_has_an_example_input_for_asya_smoke(example: str) -> None:
    mesh = load_mesh(Path(__file__).resolve().parents[2] / "examples" / example / "mesh.yaml")
    assert all(flow.input_schema.get("examples") for flow in mesh.config.flows.values())


MANY_MISTAKES = """
namespace: shop
actors:
  a: {handler: mod.fn, memory: 99999}
  b: {handler: mod.fn, code: ./nowhere}
  j: {handler: mod.fn, join: {branches_of: ghost}}
flows:
  main: {route: [a, b, phantom]}
"""


def test_every_problem_of_a_mesh_file_is_reported_in_one_run_one_line_each(tmp_path: Path) -> None:
    """A field out of range, a route and a join naming actors that do not exist, and a code folder that
    is not there: all four at once, each `<file>: <field>: <what is wrong>` on a line of its own."""
    path = _write(tmp_path, MANY_MISTAKES)
    with pytest.raises(MeshConfigError) as refused:
        load_mesh(path)
    lines = str(refused.value).splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "actors.a.memory",
        "flows.main.route[2]",
        "actors.j.join.branches_of[0]",
        "actors.b.code",
    ]
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert "Value error" not in str(refused.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "namespace: shop\nactors:\n  a: {handlr: mod.fn}\n",
            "actors.a.handlr: not a field; did you mean `handler`, which is required?",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: mod.fn}\nflows:\n  f: {rout: [a]}\n",
            "flows.f.rout: not a field; give a flow either a route (a list of actors) or a program "
            "(module.function); did you mean `route`?",
        ),
        (
            "namespace: shop\nactors:\n  a:\n    handler: mod.fn\n"
            "    permissions: [{actions: ['s3:GetObject'], resource: ['*']}]\n",
            "actors.a.permissions[0].resource: not a field; did you mean `resources`, which is required?",
        ),
        (
            "namespace: shop\nactors:\n  a: {handler: mod.fn}\nresults: {colour: 3}\n",
            "results.colour: not a field (its fields: inline_max_bytes, retention_days)",
        ),
    ],
)
def test_an_unknown_field_says_in_one_line_which_field_it_likely_means(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(MeshConfigError) as refused:
        load_mesh(_write(tmp_path, text))
    assert str(refused.value).splitlines() == [f"{tmp_path / 'mesh.yaml'}: {said}"]


def test_a_wrong_actor_is_not_left_out_to_make_its_references_fail(tmp_path: Path) -> None:
    """An actor wrong as a whole (no handler) is reported for itself; the route naming it is not called
    a route to an unknown actor."""
    with pytest.raises(MeshConfigError) as refused:
        load_mesh(_write(tmp_path, "namespace: shop\nactors:\n  a: {timeout: 5}\nflows:\n  f: {route: [a]}\n"))
    assert str(refused.value).splitlines() == [f"{tmp_path / 'mesh.yaml'}: actors.a.handler: Field required"]
