"""The mesh file's gateway and status sections, routes through x-pause, and the flows' size limit:
every error names the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asya.names import GATEWAY
from asya_cdk.environment import MeshNames, gateway_environment
from asya_cdk.loading import MeshConfigError, load_mesh

ACTORS = "namespace: shop\nactors:\n  a: {handler: mod.fn}\n  b: {handler: mod.fn}\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mesh.yaml"
    path.write_text(text)
    return path


def test_defaults_and_the_shared_status_variables(tmp_path: Path) -> None:
    mesh = load_mesh(_write(tmp_path, ACTORS + "flows:\n  review: {route: [a, x-pause, b], timeout: 5m}\n"))
    gateway = mesh.config.gateway
    assert (gateway.auth, gateway.task_ttl_days, gateway.backstop_minutes) == ("iam", 7, 1)
    assert mesh.config.status.writes == "coalesced"
    assert mesh.config.flows["review"].route == ["a", "x-pause", "b"]
    variables = mesh.actor_environment("a", {"tasks_table": "t", "events_table": "e"})
    assert variables["ASYA_TASKS_TABLE"] == "t"
    assert variables["ASYA_EVENTS_TABLE"] == "e"
    assert variables["ASYA_TASK_TTL_SECONDS"] == str(7 * 86_400)
    assert variables["ASYA_STATUS_WRITES"] == "coalesced"
    assert "ASYA_TASKS_TABLE" not in mesh.actor_environment("a", {}), "no table named, no status writes"


def test_gateway_and_status_settings_reach_the_variables(tmp_path: Path) -> None:
    text = ACTORS + "gateway: {auth: api_key, task_ttl_days: 30, backstop_minutes: 60}\nstatus: {writes: every-point}\n"
    mesh = load_mesh(_write(tmp_path, text))
    assert mesh.config.gateway.auth == "api_key"
    variables = mesh.actor_environment("b", {})
    assert variables["ASYA_TASK_TTL_SECONDS"] == str(30 * 86_400)
    assert variables["ASYA_STATUS_WRITES"] == "every-point"
    assert mesh.status_environment({}) == {"ASYA_TASK_TTL_SECONDS": str(30 * 86_400)}


def test_the_mcp_wait_reaches_the_gateway_only_when_it_is_not_the_default(tmp_path: Path) -> None:
    """A host whose tool calls time out sooner than 20 s sets a shorter wait; its tools then answer that
    the task runs, and `task_result` waits again."""
    names = MeshNames("bucket", "tasks", "events", "idempotency", "batches", "sump")
    shorter = load_mesh(_write(tmp_path, ACTORS + "gateway: {mcp_wait_seconds: 5}\n"))
    assert gateway_environment(shorter, names, GATEWAY)["ASYA_MCP_WAIT_SECONDS"] == "5.0"
    assert "ASYA_MCP_WAIT_SECONDS" not in gateway_environment(load_mesh(_write(tmp_path, ACTORS)), names, GATEWAY)


def test_flows_json_is_what_the_gateway_reads(tmp_path: Path) -> None:
    text = ACTORS + "flows:\n  f: {route: [a], description: d, input_schema: {type: object, required: [x]}}\n"
    mesh = load_mesh(_write(tmp_path, text))
    assert json.loads(mesh.flows_json()) == {
        "f": {
            "route": ["a"],
            "description": "d",
            "timeout": None,
            "input_schema": {"type": "object", "required": ["x"]},
        }
    }


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("gateway: {auth: cognito}\n", "gateway.auth: Input should be 'iam', 'api_key' or 'jwt'"),
        ("gateway: {task_ttl_days: 0}\n", "gateway.task_ttl_days: Input should be greater than or equal to 1"),
        ("gateway: {backstop_minutes: 61}\n", "gateway.backstop_minutes: Input should be less than or equal to 60"),
        ("gateway: {colour: red}\n", "gateway.colour: not a field"),
        ("gateway: {mcp_wait_seconds: 26}\n", "gateway.mcp_wait_seconds: Input should be less than or equal to 25"),
        ("status: {writes: sometimes}\n", "status.writes: Input should be 'coalesced' or 'every-point'"),
        ("status: {write: every-point}\n", "status.write: not a field; did you mean `writes`?"),
        ("flows:\n  f: {route: [a, x-sink]}\n", "flows.f.route[1]: x-sink cannot be in a route"),
        ("flows:\n  f: {route: [x-sump]}\n", "flows.f.route[0]: x-sump cannot be in a route"),
        ("flows:\n  f: {route: [a, x-resume]}\n", "flows.f.route[1]: x-resume cannot be in a route"),
    ],
)
def test_bad_gateway_status_and_route_settings_name_the_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, ACTORS + text)
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert fragment in str(caught.value)


@pytest.mark.parametrize("name", ["x-pause", "x-resume", "gateway", "gateway-stream", "gateway-stream-dlq"])
def test_names_the_mesh_uses_itself_are_not_actor_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(MeshConfigError, match=f"actors.{name}: actor names are"):
        load_mesh(_write(tmp_path, f"namespace: shop\nactors:\n  {name}: {{handler: m.f}}\n"))


def test_flows_too_large_for_the_gateway_environment_are_refused(tmp_path: Path) -> None:
    description = "x" * 1_000
    flows = "".join(f"  f{i}: {{route: [a], description: {description}}}\n" for i in range(4))
    path = _write(tmp_path, ACTORS + "flows:\n" + flows)
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: flows: the gateway's environment (asya-shop-gateway) would be up to ")
    assert "over Lambda's 4,096-byte limit" in message
    assert "largest: ASYA_FLOWS 4," in message


@pytest.mark.parametrize(
    ("actor", "fragment"),
    [
        ("  j: {handler: m.f, join: {branches_of: nobody}}\n", "actors.j.join.branches_of[0]: unknown actor 'nobody'"),
        ("  j: {handler: m.f, join: {branches_of: [a, j]}}\n", "actors.j.join.branches_of[1]: a join cannot gather"),
        ("  j: {handler: m.f, join: {branches_of: []}}\n", "actors.j.join.branches_of: List should have at least 1"),
        (
            "  j: {handler: m.f, join: {branches_of: a, on_failure: never}}\n",
            "actors.j.join.on_failure: on_failure must be fail_fast, collect",
        ),
        ("  j: {handler: m.f, join: {branches_of: a, on_failure: {tolerate: 120%}}}\n", "actors.j.join.on_failure"),
        ("  j: {handler: m.f, join: {branches_of: a, on_failure: {tolerate: -1}}}\n", "actors.j.join.on_failure"),
        ("  j: {handler: m.f, runtime: spark, join: {branches_of: a}}\n", "actors.j: join: a Spark actor"),
        (
            "  j: {handler: m.f, join: {branches_of: a}}\nflows:\n  f: {route: [b, j]}\n",
            "flows.f.route[1]: j joins the branches of a (actors.j.join.branches_of), but none comes before it",
        ),
    ],
)
def test_a_bad_join_names_the_field(tmp_path: Path, actor: str, fragment: str) -> None:
    path = _write(tmp_path, ACTORS + actor)
    with pytest.raises(MeshConfigError) as caught:
        load_mesh(path)
    assert fragment in str(caught.value)


def test_a_join_and_its_sources_are_told_of_each_other(tmp_path: Path) -> None:
    text = ACTORS + "  j: {handler: m.f, join: {branches_of: [a, b], on_failure: {tolerate: 10%}}}\n"
    mesh = load_mesh(_write(tmp_path, text + "flows:\n  f: {route: [a, b, j]}\n"))
    resources = {"joins_table": "asya-shop-joins"}
    assert mesh.actor_environment("a", resources)["ASYA_JOINED_BY"] == "j"
    join = mesh.actor_environment("j", resources)
    assert (join["ASYA_JOIN"], join["ASYA_JOINS_TABLE"]) == ('{"tolerate":"10%"}', "asya-shop-joins")
    assert "ASYA_JOIN" not in mesh.actor_environment("a", resources)
    assert mesh.joins == ["j"]
