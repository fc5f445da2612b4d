"""`tracing: true` at the top of the mesh file: one switch traces a whole task, every function a hop of
it runs in (each actor, the crew, the gateway) traced, told so, and allowed to write segments."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from tests.support.templates import ROOT, actions_of, resources, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
HOPS = ("split", "score", "triage", "escalate", "summarise", "x-sink", "x-sump", "x-pause", "x-resume", "gateway")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["tracing"] = True
    mesh = LoadedMesh(config=MeshConfig.model_validate(document), base=EXAMPLE.parent)
    return synthesize(mesh, tmp_path_factory.mktemp("cdk.out"))[1]


def _functions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}


def _role_actions(document: dict[str, Any], function: dict[str, Any]) -> set[str]:
    role = function["Role"]["Fn::GetAtt"][0]
    policies = [p for p in resources(document, "AWS::IAM::Policy").values() if {"Ref": role} in p["Roles"]]
    return actions_of([s for p in policies for s in p["PolicyDocument"]["Statement"]])


def test_one_switch_traces_every_function_a_task_runs_in(traced: dict[str, Any]) -> None:
    functions = _functions(traced)
    for name in HOPS:
        function = functions[f"asya-reviews-{name}"]
        assert function["TracingConfig"] == {"Mode": "Active"}, name
        assert function["Environment"]["Variables"]["ASYA_TRACING"] == "true", name
        assert "xray:PutTraceSegments" in _role_actions(traced, function), name
    [stage] = resources(traced, "AWS::ApiGateway::Stage").values()
    assert stage["TracingEnabled"] is True


def test_the_switch_is_read_as_each_part_saying_so() -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    plain = MeshConfig.model_validate(document)
    assert not plain.tracing
    assert not any(actor.tracing for actor in plain.actors.values())
    traced = MeshConfig.model_validate({**document, "tracing": True})
    assert all(actor.tracing for actor in traced.actors.values())
    assert traced.gateway.tracing
