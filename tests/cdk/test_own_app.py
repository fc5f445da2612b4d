"""The own-app example (examples/own_app): a mesh added to a team's stack with `AsyaMesh`, synthesized
with cdk-nag (AwsSolutions), and the construct's props refused with the field they are about."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from asya.names import DISTRIBUTION, VERSION_OUTPUT
from asya_cdk import AsyaMesh, AsyaMeshError
from asya_cdk.loading import load_mesh
from examples.own_app.app import MESH_FILE, UploadsStack
from tests.support.templates import resources, version_tags


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[UploadsStack, dict[str, Any]]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")), context={"aws:cdk:bundling-stacks": []})
    stack = UploadsStack(app, "team-uploads")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises if cdk-nag finds anything not acknowledged with a reason
    return stack, dict(Template.from_stack(stack).to_json())


def _id(stack: cdk.Stack, construct: Any) -> str:
    return stack.resolve(construct.node.default_child.logical_id) if hasattr(construct, "node") else ""


def test_the_bucket_notifies_eventbridge_and_the_rule_sends_an_envelope_to_the_first_actor(
    synthesized: tuple[UploadsStack, dict[str, Any]],
) -> None:
    stack, document = synthesized
    queue_id = _id(stack, stack.mesh.actor("inspect").queue)
    bucket_id = _id(stack, stack.uploads)
    notifications = [r for r in document["Resources"].values() if r["Type"] == "Custom::S3BucketNotifications"]
    assert len(notifications) == 1
    assert notifications[0]["Properties"]["BucketName"] == {"Ref": bucket_id}
    assert notifications[0]["Properties"]["NotificationConfiguration"] == {"EventBridgeConfiguration": {}}
    rule = resources(document, "AWS::Events::Rule")[_id(stack, stack.rule)]
    assert rule["EventPattern"]["detail"] == {"bucket": {"name": [{"Ref": bucket_id}]}}
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    template = target["InputTransformer"]["InputTemplate"]
    assert '"version":1' in template, "an envelope written by hand says its version too"
    assert '"prev":[]' in template
    assert '"curr":"inspect"' in template
    assert '"next":["label"]' in template


def test_the_queue_policy_admits_the_rule_only(synthesized: tuple[UploadsStack, dict[str, Any]]) -> None:
    stack, document = synthesized
    queue_id = _id(stack, stack.mesh.actor("inspect").queue)
    policies = [p for p in resources(document, "AWS::SQS::QueuePolicy").values() if {"Ref": queue_id} in p["Queues"]]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    allowed = [s for s in statements if s["Effect"] == "Allow"]
    assert len(allowed) == 1
    assert allowed[0]["Principal"] == {"Service": "events.amazonaws.com"}
    assert "sqs:SendMessage" in allowed[0]["Action"]  # with CDK's GetQueueAttributes and GetQueueUrl
    assert not [a for a in allowed[0]["Action"] if not a.startswith(("sqs:SendMessage", "sqs:GetQueue"))]
    assert allowed[0]["Condition"]["ArnEquals"]["aws:SourceArn"] == {"Fn::GetAtt": [_id(stack, stack.rule), "Arn"]}


def test_the_producer_may_send_to_the_flows_first_queue_and_nothing_else(
    synthesized: tuple[UploadsStack, dict[str, Any]],
) -> None:
    stack, document = synthesized
    producer_id = _id(stack, stack.producer)
    statements = [
        s
        for p in resources(document, "AWS::IAM::Policy").values()
        if {"Ref": producer_id} in p["Roles"]
        for s in p["PolicyDocument"]["Statement"]
    ]
    assert statements == [
        {
            "Action": "sqs:SendMessage",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [_id(stack, stack.mesh.actor("inspect").queue), "Arn"]},
        }
    ]


def test_the_constructs_attributes_are_the_templates_resources(
    synthesized: tuple[UploadsStack, dict[str, Any]],
) -> None:
    stack, document = synthesized
    mesh = stack.mesh
    kinds = {
        _id(stack, mesh.actor("inspect").queue): "AWS::SQS::Queue",
        _id(stack, mesh.actor("label").queue): "AWS::SQS::Queue",
        _id(stack, mesh.actor("label").function): "AWS::Lambda::Function",
        _id(stack, mesh.actor("label").role): "AWS::IAM::Role",
        _id(stack, mesh.tasks_table): "AWS::DynamoDB::Table",
        _id(stack, mesh.results_bucket): "AWS::S3::Bucket",
        _id(stack, mesh.api): "AWS::ApiGateway::RestApi",
    }
    for logical_id, kind in kinds.items():
        assert document["Resources"][logical_id]["Type"] == kind
    label_queue = document["Resources"][_id(stack, mesh.actor("label").queue)]
    assert label_queue["Properties"]["QueueName"] == "asya-uploads-label"
    assert stack.mesh.actor("x-sink").queue is stack.mesh.actors["x-sink"].queue
    assert "ApiUrl" in document["Outputs"]


def test_the_mesh_records_its_release_on_its_own_resources_in_the_teams_stack(
    synthesized: tuple[UploadsStack, dict[str, Any]],
) -> None:
    """The construct tags what it makes and nothing of the team's (its uploads bucket), and adds no
    output: the stack's outputs are the team's to choose."""
    stack, document = synthesized
    tagged = version_tags(document)
    mesh_queue = _id(stack, stack.mesh.actor("inspect").queue)
    assert tagged[mesh_queue] == version(DISTRIBUTION)
    assert tagged[_id(stack, stack.mesh.actor("label").function)] == version(DISTRIBUTION)
    assert tagged.get(_id(stack, stack.uploads)) is None
    assert VERSION_OUTPUT not in document["Outputs"]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda mesh: mesh.actor("nope"), "'nope'"),
        (lambda mesh: mesh.grant_send(mesh.actor("inspect").role, flow="no-such-flow"), "'no-such-flow'"),
    ],
)
def test_a_wrong_name_is_refused_naming_it(
    synthesized: tuple[UploadsStack, dict[str, Any]], call: Any, named: str
) -> None:
    with pytest.raises(AsyaMeshError, match=named):
        call(synthesized[0].mesh)


def test_a_missing_mesh_file_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(AsyaMeshError, match=r"absent\.yaml"):
        AsyaMesh(cdk.Stack(cdk.App()), "Mesh", mesh_file=missing)


def test_a_bad_config_object_is_refused_naming_the_field() -> None:
    with pytest.raises(AsyaMeshError, match=r"actors\.inspect\.memory"):
        AsyaMesh(
            cdk.Stack(cdk.App()),
            "Mesh",
            config={"namespace": "uploads", "actors": {"inspect": {"handler": "actors.inspect", "memory": 1}}},
            base_dir=MESH_FILE.parent,
        )


def test_both_props_or_neither_is_refused() -> None:
    with pytest.raises(AsyaMeshError, match="exactly one of mesh_file"):
        AsyaMesh(cdk.Stack(cdk.App()), "Mesh")


def test_the_light_modules_still_load_without_aws_cdk() -> None:
    """The command-line tool imports asya_cdk.config and asya_cdk.loading; AsyaMesh is loaded on demand."""
    probe = "import sys, asya_cdk.loading, asya_cdk.config; print('aws_cdk' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_typed_config_builds_the_same_mesh_as_its_file() -> None:
    """A `MeshConfig` made in code is checked and loaded as its file would be (`mesh_from_config`)."""
    config = load_mesh(MESH_FILE).config
    mesh = AsyaMesh(cdk.Stack(cdk.App()), "Mesh", config=config, base_dir=MESH_FILE.parent)
    assert mesh.mesh.config == config
    assert mesh.flow_entry("label-uploads").name == "inspect"
