"""`state:` on an actor (docs/actors.md, "State"): one state table for the mesh, each stateful actor's
role granted its own keys only (`dynamodb:LeadingKeys`), its function told the table; no state, nothing made."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from asya_cdk.loading import load_mesh
from asya_cdk.mesh_error import MeshConfigError
from asya_local.endpoint.moto_iam import Request, decide
from tests.support.templates import resources, role_statements, synthesize

MESHES = Path(__file__).parent / "meshes"
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/asya-stateful-actor-state"


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synthesize(load_mesh(MESHES / "state.yaml"), tmp_path_factory.mktemp("cdk.out"))[1]


def _state_table(document: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    tables = resources(document, "AWS::DynamoDB::Table")
    [(key, table)] = [(k, t) for k, t in tables.items() if t["TableName"] == "asya-stateful-actor-state"]
    return key, table


def _on_state(document: dict[str, Any], actor: str) -> list[dict[str, Any]]:
    """The actor's statements on the state table, its ARN written out as IAM sees it."""
    arn = {"Fn::GetAtt": [_state_table(document)[0], "Arn"]}
    return [
        {**s, "Resource": TABLE} for s in role_statements(document, f"MeshActor{actor}Role") if s["Resource"] == arn
    ]


def _allowed(statements: list[dict[str, Any]], operation: str, partition_key: str) -> bool:
    policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return decide([policy], Request(f"dynamodb:{operation}", (TABLE,), {"dynamodb:leadingkeys": (partition_key,)}))


def _environment(document: dict[str, Any], actor: str) -> dict[str, Any]:
    functions = resources(document, "AWS::Lambda::Function").values()
    [function] = [f for f in functions if f.get("FunctionName") == f"asya-stateful-{actor}"]
    variables: dict[str, Any] = function["Environment"]["Variables"]
    return variables


def test_the_state_table_is_on_demand_encrypted_recoverable_and_expiring(document: dict[str, Any]) -> None:
    _, table = _state_table(document)
    assert table["KeySchema"] == [{"AttributeName": "key", "KeyType": "HASH"}]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_each_stateful_actor_reads_and_puts_its_own_keys_only(document: dict[str, Any]) -> None:
    counter = _on_state(document, "counter")
    assert [s["Action"] for s in counter] == [["dynamodb:GetItem", "dynamodb:PutItem"]]
    assert counter[0]["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["counter#*"]}}
    assert _allowed(counter, "GetItem", "counter#calls")
    assert _allowed(counter, "PutItem", "counter#calls")
    assert not _allowed(counter, "GetItem", "memo#calls"), "another actor's key"
    assert not _allowed(counter, "GetItem", "counterfeit#calls"), "an actor whose name starts the same"
    assert not _allowed(counter, "DeleteItem", "counter#calls"), "a delete is a tombstone put"
    assert not _allowed(counter, "Scan", "counter#calls")
    assert _on_state(document, "plain") == [], "no state, no grant"
    for crew in ("xsink", "xsump", "xpause", "xresume"):
        assert _on_state(document, crew) == []


def _state_bucket(document: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    [(key, bucket)] = [(k, b) for k, b in resources(document, "AWS::S3::Bucket").items() if k.startswith("MeshState")]
    return key, bucket


def test_large_values_go_to_a_bucket_of_their_own_each_actor_to_its_own_prefix(document: dict[str, Any]) -> None:
    key, bucket = _state_bucket(document)
    encryption = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    assert bucket["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    rules = bucket["LifecycleConfiguration"]["Rules"]
    expiring = [(r.get("Prefix"), r["ExpirationInDays"]) for r in rules if "ExpirationInDays" in r]
    assert expiring == [("memo/", 31)], "only the objects of an actor whose keys expire, a day after them"
    granted = [s for s in role_statements(document, "MeshActorcounterRole") if key in json.dumps(s.get("Resource"))]
    assert [(s["Action"], s["Resource"]["Fn::Join"][1][-1]) for s in granted] == [
        (["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], "/counter/*")
    ]
    assert not [s for s in role_statements(document, "MeshActorplainRole") if key in json.dumps(s.get("Resource"))]
    assert _environment(document, "counter")["ASYA_STATE_BUCKET"] == {"Ref": key}


def test_a_stateful_actors_function_is_told_the_table_and_its_keys_ttl(document: dict[str, Any]) -> None:
    key, _ = _state_table(document)
    assert _environment(document, "counter")["ASYA_STATE_TABLE"] == {"Ref": key}
    assert "ASYA_STATE_TTL_DAYS" not in _environment(document, "counter")
    assert _environment(document, "memo")["ASYA_STATE_TTL_DAYS"] == "30"
    assert "ASYA_STATE_TABLE" not in _environment(document, "plain")


def test_a_mesh_without_state_makes_no_state_table(tmp_path: Path) -> None:
    (tmp_path / "actors.py").write_text((MESHES / "actors.py").read_text())
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text("namespace: n\nactors:\n  a: {handler: actors.handle, state: false}\n")
    document = synthesize(load_mesh(mesh), tmp_path / "cdk.out")[1]
    names = [t["TableName"] for t in resources(document, "AWS::DynamoDB::Table").values()]
    assert "asya-n-actor-state" not in names
    assert not [k for k in resources(document, "AWS::S3::Bucket") if k.startswith("MeshState")]
    assert "ASYA_STATE_TABLE" not in json.dumps(document)


@pytest.mark.parametrize(
    ("setting", "refusal"),
    [
        ("state: {ttl_day: 3}", "actors.a.state.ttl_day: not a field"),
        ("state: {ttl_days: 0}", "actors.a.state.ttl_days"),
        ("state: yes please", "actors.a.state"),
        ("runtime: spark, state: true", "state: for Lambda actors"),
    ],
)
def test_a_wrong_state_setting_is_refused_naming_the_field(tmp_path: Path, setting: str, refusal: str) -> None:
    (tmp_path / "actors.py").write_text((MESHES / "actors.py").read_text())
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(f"namespace: n\nactors:\n  a: {{handler: actors.handle, {setting}}}\n")
    with pytest.raises(MeshConfigError, match=re.escape(refusal)):
        load_mesh(mesh)
