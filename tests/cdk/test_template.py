"""The synthesized template: names, redrive, encryption, IAM scope, event sources, dashboard, alarms,
with cdk-nag (AwsSolutions) and cfn-lint run on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from asya_cdk.config import load_mesh
from asya_cdk.stack import MeshStack

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ACTORS = ("split", "score", "triage", "escalate")


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, dict[str, Any], Path]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:bundling-stacks": []})
    stack = MeshStack(app, "asya-reviews", mesh=load_mesh(EXAMPLE))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises if cdk-nag finds anything not acknowledged with a reason
    template = Template.from_stack(stack)
    return template, dict(template.to_json()), outdir


def _resources(document: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {key: r["Properties"] for key, r in document["Resources"].items() if r["Type"] == kind}


def _queue(document: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    return next((key, q) for key, q in _resources(document, "AWS::SQS::Queue").items() if q["QueueName"] == name)


def test_every_actor_and_the_crew_have_named_queues_and_functions(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    queues = {q["QueueName"] for q in _resources(document, "AWS::SQS::Queue").values()}
    expected = {f"asya-reviews-{a}" for a in (*ACTORS, "x-sink", "x-sump")} | {"asya-reviews-x-sump-dlq"}
    assert queues == expected
    functions = {f["FunctionName"]: f for f in _resources(document, "AWS::Lambda::Function").values()}
    assert set(functions) == {f"asya-reviews-{a}" for a in (*ACTORS, "x-sink", "x-sump")}
    assert functions["asya-reviews-score"]["Handler"] == "asya.lambda_handler"
    assert functions["asya-reviews-x-sink"]["Handler"] == "asya_crew.sink.lambda_handler"
    variables = functions["asya-reviews-score"]["Environment"]["Variables"]
    assert variables["ASYA_NAMESPACE"] == "reviews"
    assert variables["ASYA_ACTOR_NAME"] == "score"
    assert variables["ASYA_HANDLER"] == "actors.SentimentModel.score"
    assert "Ref" in variables["ASYA_IDEMPOTENCY_TABLE"]
    triage = functions["asya-reviews-triage"]["Environment"]["Variables"]
    assert json.loads(triage["ASYA_RESILIENCY"])["policies"]["default"]["max_attempts"] == 3
    assert all(f["Layers"] for f in functions.values())
    assert {f["Architectures"][0] for f in functions.values()} == {"arm64"}


def test_redrive_leads_to_sump_and_sump_to_its_dead_letter_queue(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    sump_key, sump = _queue(document, "asya-reviews-x-sump")
    dlq_key, _ = _queue(document, "asya-reviews-x-sump-dlq")
    for name in (*ACTORS, "x-sink"):
        _, queue = _queue(document, f"asya-reviews-{name}")
        assert queue["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [sump_key, "Arn"]},
            "maxReceiveCount": 5,
        }
    assert sump["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq_key, "Arn"]}


def test_visibility_timeout_is_six_times_the_function_timeout(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    functions = {f["FunctionName"]: f for f in _resources(document, "AWS::Lambda::Function").values()}
    for name in (*ACTORS, "x-sink", "x-sump"):
        _, queue = _queue(document, f"asya-reviews-{name}")
        assert queue["VisibilityTimeout"] == 6 * functions[f"asya-reviews-{name}"]["Timeout"]
    assert functions["asya-reviews-split"]["Timeout"] == 10 * 10 + 10, "a whole batch of 10 at 10 s each fits"


def test_queues_are_encrypted_and_tls_only(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    _, document, _ = synthesized
    assert all(q["SqsManagedSseEnabled"] for q in _resources(document, "AWS::SQS::Queue").values())
    policies = _resources(document, "AWS::SQS::QueuePolicy")
    assert len(policies) == 7
    for policy in policies.values():
        statement = policy["PolicyDocument"]["Statement"][0]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_results_bucket_is_encrypted_private_tls_only_with_lifecycle(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    template, document, _ = synthesized
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LifecycleConfiguration": {
                "Rules": Match.array_with([Match.object_like({"ExpirationInDays": 90, "Status": "Enabled"})])
            },
        },
    )
    [policy] = _resources(document, "AWS::S3::BucketPolicy").values()
    assert policy["PolicyDocument"]["Statement"][0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    )


def _statements(document: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    policies = [
        p
        for p in _resources(document, "AWS::IAM::Policy").values()
        if any(ref["Ref"].startswith(role_prefix) for ref in p["Roles"])
    ]
    return [s for p in policies for s in p["PolicyDocument"]["Statement"]]


def test_actor_roles_are_least_privilege(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    _, document, _ = synthesized
    for actor in ACTORS:
        statements = _statements(document, f"MeshActor{actor}Role")
        actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        assert not any(a.endswith(":*") or a == "*" for a in actions)
        assert not any("s3:" in a for a in actions), "actors do not touch the results bucket"
        send = next(s for s in statements if "sqs:SendMessage" in s["Action"])
        assert send["Resource"] == {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":sqs:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    ":asya-reviews-*",
                ],
            ]
        }
        items = next(s for s in statements if "dynamodb:PutItem" in s["Action"])
        assert items["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["asya-reviews#*"]}}
        consume = next(s for s in statements if "sqs:ReceiveMessage" in s["Action"])
        assert consume["Resource"] == {"Fn::GetAtt": [_queue(document, f"asya-reviews-{actor}")[0], "Arn"]}
        assert all(s["Resource"] != "*" for s in statements)
    for crew in ("xsink", "xsump"):
        puts = [s for s in _statements(document, f"MeshCrew{crew}Role") if s["Action"] == "s3:PutObject"]
        assert len(puts) == 1
        assert puts[0]["Resource"]["Fn::Join"][1][-1] == "/results/reviews/*"


def test_event_sources_report_partial_batch_failures_with_configured_settings(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    template, document, _ = synthesized
    mappings = _resources(document, "AWS::Lambda::EventSourceMapping")
    assert len(mappings) == 6
    assert all(m["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings.values())
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "BatchSize": 10,
            "ScalingConfig": {"MaximumConcurrency": 5},
            "FunctionName": {"Ref": Match.string_like_regexp("MeshActorscoreFunction")},
        },
    )


def test_dashboard_and_alarms_exist(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    template, document, _ = synthesized
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    alarms = {a["AlarmName"]: a for a in _resources(document, "AWS::CloudWatch::Alarm").values()}
    assert set(alarms) == {"asya-reviews-x-sump-arrivals", "asya-reviews-x-sump-dlq-depth"}
    arrivals = json.dumps(alarms["asya-reviews-x-sump-arrivals"])
    assert '"MetricName": "SumpArrivals"' in arrivals
    assert '"Value": "x-sump"' in arrivals
    body = json.dumps(_resources(document, "AWS::CloudWatch::Dashboard"))
    for needle in (
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
        "MessagesFailed",
        "HandlerDuration",
        "SumpArrivals",
    ):
        assert needle in body


def test_cfn_lint_passes(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    _, _, outdir = synthesized
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "cfn-lint"),
            "--ignore-checks",
            "W3005",
            "--",
            str(outdir / "asya-reviews.template.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_cdk_app_refuses_a_bad_mesh_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "mesh.yaml"
    bad.write_text("namespace: demo\nactors:\n  a: {handler: m.f, code: ., batch_sise: 5}\n")
    environment = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({"mesh": str(bad)}),
        "CDK_OUTDIR": str(tmp_path / "out"),
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "cdk" / "app.py")], capture_output=True, text=True, env=environment, check=False
    )
    assert result.returncode != 0
    assert f"{bad}: actors.a.batch_sise: Extra inputs are not permitted" in result.stderr
