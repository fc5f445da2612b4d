"""An actor's role sees only its hop (security review, finding 4): on the tasks table it names the hop's
attributes only, reads only by projection and sends only to the mesh's own queues, by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from asya.task_attributes import CALLER_OWNED, CREATED_BY_GATEWAY, HOP_READS, HOP_WRITES, KEY
from asya_cdk.loading import load_mesh
from asya_cdk.queue_grants import sending_policies
from asya_cdk.queue_lists import QUEUES_PER_POLICY
from asya_local.endpoint.dynamodb_conditions import condition_keys
from asya_local.endpoint.moto_iam import Request, decide
from tests.support.templates import ROOT, actions_of, resources, role_statements, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ACTORS = ("split", "score", "triage", "escalate", "summarise")
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/asya-reviews-tasks"


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synthesize(load_mesh(EXAMPLE), tmp_path_factory.mktemp("cdk.out"))[1]


def _tasks(document: dict[str, Any]) -> str:
    [key] = [
        k for k, t in resources(document, "AWS::DynamoDB::Table").items() if t["TableName"] == "asya-reviews-tasks"
    ]
    return key


def _on_tasks(document: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """The role's statements on the tasks table, its ARN written out (as IAM would see it)."""
    arn = {"Fn::GetAtt": [_tasks(document), "Arn"]}
    found = [s for s in role_statements(document, role) if s["Resource"] == arn]
    return [{**s, "Resource": TABLE} for s in found]


def _allowed(statements: list[dict[str, Any]], operation: str, payload: dict[str, Any]) -> bool:
    policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return decide([policy], Request(f"dynamodb:{operation}", (TABLE,), condition_keys(operation, payload)))


@pytest.mark.parametrize("actor", ACTORS)
def test_an_actor_reads_and_writes_only_the_hops_attributes(document: dict[str, Any], actor: str) -> None:
    statements = _on_tasks(document, f"MeshActor{actor}Role")
    assert actions_of(statements) == {
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
    }
    for statement in statements:
        assert statement["Effect"] == "Allow"
        listed = set(statement["Condition"]["ForAllValues:StringEquals"]["dynamodb:Attributes"])
        assert KEY in listed, "IAM counts the key: without it nothing is allowed"
        assert not listed & CALLER_OWNED, "the caller's input, owner and result are not the hop's"
        if "dynamodb:UpdateItem" in actions_of([statement]):
            assert listed == HOP_WRITES
            assert set(statement["Condition"]["StringEqualsIfExists"]["dynamodb:ReturnValues"]) == {
                "NONE",
                "UPDATED_OLD",
                "UPDATED_NEW",
            }, "an update never returns the whole record"
        else:
            assert listed == HOP_READS
            assert statement["Condition"]["StringEqualsIfExists"] == {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}


def test_an_actors_grant_refuses_the_callers_attributes_and_allows_the_hop(document: dict[str, Any]) -> None:
    """The synthesized grant, decided as the local endpoint decides it."""
    statements = _on_tasks(document, "MeshActorscoreRole")
    key = {"id": {"S": "t1"}}
    assert not _allowed(statements, "GetItem", {"Key": key}), "the whole record"
    projected = {"Key": key, "ProjectionExpression": "#i", "ExpressionAttributeNames": {"#i": "input"}}
    assert not _allowed(statements, "GetItem", projected)
    owner = {"Key": key, "UpdateExpression": "SET #o = :o", "ExpressionAttributeNames": {"#o": "owner"}}
    assert not _allowed(statements, "UpdateItem", owner)
    claim = {
        "Key": key,
        "UpdateExpression": "SET #s = :s, hop_position = :p",
        "ExpressionAttributeNames": {"#s": "status"},
    }
    assert _allowed(statements, "UpdateItem", claim)
    assert not _allowed(statements, "UpdateItem", {**claim, "ReturnValues": "ALL_NEW"}), "the record returned"
    status = {
        "RequestItems": {
            "t": {"Keys": [key], "ProjectionExpression": "id, #s", "ExpressionAttributeNames": {"#s": "status"}}
        }
    }
    assert _allowed(statements, "BatchGetItem", status), "the pre-flight check"


@pytest.mark.parametrize("crew", ["xsink", "xsump", "xpause", "xresume"])
def test_the_crew_may_not_rewrite_what_the_gateway_wrote(document: dict[str, Any], crew: str) -> None:
    statements = _on_tasks(document, f"MeshCrew{crew}Role")
    [deny] = [s for s in statements if s["Effect"] == "Deny"]
    assert set(deny["Condition"]["ForAnyValue:StringEquals"]["dynamodb:Attributes"]) == CREATED_BY_GATEWAY
    key = {"id": {"S": "t1"}}
    owner = {"Key": key, "UpdateExpression": "SET #o = :o", "ExpressionAttributeNames": {"#o": "owner"}}
    assert not _allowed(statements, "UpdateItem", owner)
    assert _allowed(
        statements,
        "UpdateItem",
        {"Key": key, "UpdateExpression": "SET #out = :o", "ExpressionAttributeNames": {"#out": "output"}},
    )


def test_a_mesh_of_many_queues_is_granted_them_in_several_managed_policies(tmp_path: Path) -> None:
    """Exact ARNs, at most `QUEUES_PER_POLICY` to a policy, each under IAM's 6,144 characters with the
    longest names a mesh may have and the ARN of a real account written out."""
    stack = cdk.Stack(cdk.App(outdir=str(tmp_path)), "Queues")
    queues = [f"actor-{index:02d}-" + "n" * 60 for index in range(90)]
    policies = sending_policies(stack, "Send", "ns", queues)
    assert len(policies) == 3
    template = dict(Template.from_stack(stack).to_json())
    listed: list[str] = []
    for managed in resources(template, "AWS::IAM::ManagedPolicy").values():
        [statement] = managed["PolicyDocument"]["Statement"]
        arns = ["".join(_written_out(part) for part in r["Fn::Join"][1]) for r in statement["Resource"]]
        assert len(arns) <= QUEUES_PER_POLICY
        assert not [a for a in arns if "*" in a]
        written = {**managed["PolicyDocument"], "Statement": [{**statement, "Resource": arns}]}
        assert len(json.dumps(written, separators=(",", ":"))) < 6_144
        listed += [a.rsplit(":", 1)[-1] for a in arns]
    assert sorted(listed) == sorted(f"asya-ns-{q}" for q in queues)


# The longest values CloudFormation's pseudo parameters take in an ARN.
_PSEUDO = {"AWS::Partition": "aws-us-gov", "AWS::Region": "ap-southeast-2", "AWS::AccountId": "123456789012"}


def _written_out(part: str | dict[str, str]) -> str:
    return part if isinstance(part, str) else _PSEUDO[part["Ref"]]
