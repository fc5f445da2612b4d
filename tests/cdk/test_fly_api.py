"""FLY's fast lane in the template (`asya_cdk.fly_api`): one AppSync Events API per mesh, IAM for every
mode, one namespace refusing wildcard subscriptions; actors may publish and nothing else, the gateway's
API function may connect, subscribe and publish (what actors outside the mesh post), its other
functions nothing; `gateway.fly: log` makes none of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from asya.variables import FLY_DOMAIN, FLY_REALTIME_DOMAIN
from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local.endpoint.event_api import api_arn, namespace_arn
from asya_local.endpoint.moto_iam import Request, decide
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from tests.support.templates import ROOT, actions_of, resources, role_statements, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ACTORS = ("split", "score", "triage", "escalate", "summarise")


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synthesize(load_mesh(EXAMPLE), tmp_path_factory.mktemp("cdk.out"))[1]


def _api(document: dict[str, Any]) -> str:
    [api] = resources(document, "AWS::AppSync::Api")
    return api


def _appsync(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in statements if any(a.startswith("appsync:") for a in actions_of([s]))]


def test_the_mesh_has_one_event_api_all_iam_and_one_namespace_refusing_wildcards(document: dict[str, Any]) -> None:
    [api] = resources(document, "AWS::AppSync::Api").values()
    assert api["Name"] == "asya-reviews-fly"
    modes = api["EventConfig"]
    for key in ("AuthProviders", "ConnectionAuthModes", "DefaultPublishAuthModes", "DefaultSubscribeAuthModes"):
        assert modes[key] == [{"AuthType": "AWS_IAM"}], f"{key}: IAM only, no API key"
    [namespace] = resources(document, "AWS::AppSync::ChannelNamespace").values()
    assert namespace["Name"] == "asya"
    assert "onSubscribe" in namespace["CodeHandlers"]
    assert "'*'" in namespace["CodeHandlers"]
    assert "util.unauthorized()" in namespace["CodeHandlers"]


def test_actors_may_publish_on_the_namespace_only_and_the_crew_not_at_all(document: dict[str, Any]) -> None:
    api = _api(document)
    for actor in ACTORS:
        [publish] = _appsync(role_statements(document, f"MeshActor{actor}Role"))
        assert publish["Action"] == "appsync:EventPublish"
        parts = publish["Resource"]["Fn::Join"][1]
        assert {"Fn::GetAtt": [api, "ApiId"]} in parts
        assert parts[-1] == "/channelNamespace/asya"
    for crew in ("xsink", "xsump", "xpause", "xresume"):
        assert _appsync(role_statements(document, f"MeshCrew{crew}Role")) == []


def test_the_gateway_api_may_connect_subscribe_and_publish_and_its_other_functions_nothing(
    document: dict[str, Any],
) -> None:
    statements = _appsync(role_statements(document, "MeshGatewayApiRole"))
    assert sorted(actions_of(statements)) == ["appsync:EventConnect", "appsync:EventPublish", "appsync:EventSubscribe"]
    subscribe = next(s for s in statements if s["Action"] == "appsync:EventSubscribe")
    assert subscribe["Resource"]["Fn::Join"][1][-1] == "/channelNamespace/asya"
    for function in ("MeshGatewayStreamRole", "MeshGatewayBackstopRole"):
        assert _appsync(role_statements(document, function)) == []


def test_actors_learn_the_http_domain_and_the_gateway_both_domains(document: dict[str, Any]) -> None:
    api = _api(document)
    functions = {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}
    score = functions["asya-reviews-score"]["Environment"]["Variables"]
    assert score[FLY_DOMAIN.name] == {"Fn::GetAtt": [api, "Dns.Http"]}
    assert FLY_REALTIME_DOMAIN.name not in score
    gateway = functions["asya-reviews-gateway"]["Environment"]["Variables"]
    assert gateway[FLY_REALTIME_DOMAIN.name] == {"Fn::GetAtt": [api, "Dns.Realtime"]}
    assert FLY_DOMAIN.name not in functions["asya-reviews-x-sink"]["Environment"]["Variables"]


def test_a_mesh_that_logs_fly_events_makes_no_event_api(tmp_path: Path) -> None:
    mesh = yaml.safe_load(EXAMPLE.read_text())
    mesh.setdefault("gateway", {})["fly"] = "log"
    loaded = LoadedMesh(config=MeshConfig.model_validate(mesh), base=EXAMPLE.parent)
    document = synthesize(loaded, tmp_path)[1]
    assert resources(document, "AWS::AppSync::Api") == {}
    functions = resources(document, "AWS::Lambda::Function").values()
    assert not any(FLY_DOMAIN.name in f.get("Environment", {}).get("Variables", {}) for f in functions)


def _written_out(node: Any, api: str) -> Any:
    """A statement's resources as IAM sees them: CloudFormation's joins and references resolved."""
    known = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
    if isinstance(node, dict) and "Fn::Join" in node:
        return "".join(_written_out(part, api) for part in node["Fn::Join"][1])
    if isinstance(node, dict) and node.get("Ref") in known:
        return known[node["Ref"]]
    if isinstance(node, dict) and node.get("Fn::GetAtt") == [api, "ApiId"]:
        return "api1"
    if isinstance(node, list):
        return [_written_out(item, api) for item in node]
    return node if isinstance(node, str) else f"arn:other:{json.dumps(node)}"  # another resource's


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        ("MeshActorscoreRole", {"appsync:EventPublish"}),
        ("MeshGatewayApiRole", {"appsync:EventConnect", "appsync:EventSubscribe", "appsync:EventPublish"}),
        ("MeshCrewxsinkRole", set()),
    ],
)
def test_the_local_endpoints_iam_lets_each_role_do_its_part_only(
    document: dict[str, Any], role: str, allowed: set[str]
) -> None:
    """What fails on AWS fails locally: the endpoint's IAM (`asya_local.endpoint.moto_iam.decide`), which
    the local Event API asks (`asya_local.endpoint.event_api`), decides each role's grants as AWS would."""
    api = _api(document)
    statements = [{**s, "Resource": _written_out(s["Resource"], api)} for s in role_statements(document, role)]
    policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
    resources_of = {
        "appsync:EventPublish": namespace_arn("api1", "asya"),
        "appsync:EventSubscribe": namespace_arn("api1", "asya"),
        "appsync:EventConnect": api_arn("api1"),
    }
    decided = {
        action for action, resource in resources_of.items() if decide([policy], Request(action, (resource,), {}))
    }
    assert decided == allowed
    other_api = namespace_arn("api2", "asya")
    assert not decide([policy], Request("appsync:EventPublish", (other_api,), {})), "another mesh's API"
