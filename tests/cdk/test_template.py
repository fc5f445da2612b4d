"""The synthesized template: names, redrive, encryption, IAM scope, event sources, dashboard, alarms,
with cdk-nag (AwsSolutions) and cfn-lint run on it; the status gateway's resources: `test_gateway_template`."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from asya.names import DISTRIBUTION, VERSION_OUTPUT, VERSION_TAG
from tests.support.reviews_template import (
    ACTORS,
    CREW,
    GATEWAY,
    functions_of,
    queue_of,
    statements_on,
    table_of,
)
from tests.support.templates import (
    actions_of,
    cfn_lint,
    managed_statements,
    queue_names,
    resources,
    role_statements,
    run_cdk_app,
    version_tags,
)


def test_every_actor_and_the_crew_have_named_queues_and_functions(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    queues = {q["QueueName"] for q in resources(document, "AWS::SQS::Queue").values()}
    expected = {f"asya-reviews-{a}" for a in (*ACTORS, *CREW, "x-sump-dlq", "gateway-stream-dlq")}
    assert queues == expected
    functions = {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}
    assert set(functions) == {f"asya-reviews-{a}" for a in (*ACTORS, *CREW, *GATEWAY)}
    assert functions["asya-reviews-score"]["Handler"] == "asya.actor.lambda_handler"
    assert functions["asya-reviews-x-sink"]["Handler"] == "asya_crew.sink.lambda_handler"
    assert functions["asya-reviews-x-pause"]["Handler"] == "asya_crew.pause.lambda_handler"
    assert functions["asya-reviews-x-resume"]["Handler"] == "asya_crew.resume.lambda_handler"
    variables = functions["asya-reviews-score"]["Environment"]["Variables"]
    assert variables["ASYA_NAMESPACE"] == "reviews"
    assert variables["ASYA_ACTOR_NAME"] == "score"
    assert variables["ASYA_HANDLER"] == "actors.SentimentModel.score"
    assert "Ref" in variables["ASYA_IDEMPOTENCY_TABLE"]
    sink_variables = functions["asya-reviews-x-sink"]["Environment"]["Variables"]
    assert sink_variables["ASYA_IDEMPOTENCY_TABLE"] == variables["ASYA_IDEMPOTENCY_TABLE"], "x-sink claims records"
    triage = functions["asya-reviews-triage"]["Environment"]["Variables"]
    assert json.loads(triage["ASYA_RESILIENCY"])["policies"]["default"]["max_attempts"] == 3
    assert all(f["Layers"] for f in functions.values())
    assert {f["Architectures"][0] for f in functions.values()} == {"arm64"}


def test_redrive_leads_to_sump_and_sump_to_its_dead_letter_queue(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    sump_key, sump = queue_of(document, "asya-reviews-x-sump")
    dlq_key, _ = queue_of(document, "asya-reviews-x-sump-dlq")
    for name in (*ACTORS, "x-sink", "x-pause", "x-resume"):
        _, queue = queue_of(document, f"asya-reviews-{name}")
        assert queue["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [sump_key, "Arn"]},
            "maxReceiveCount": 5,
        }
    assert sump["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq_key, "Arn"]}


def test_visibility_timeout_is_six_times_the_function_timeout(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    functions = {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}
    for name in (*ACTORS, *CREW):
        _, queue = queue_of(document, f"asya-reviews-{name}")
        assert queue["VisibilityTimeout"] == 6 * functions[f"asya-reviews-{name}"]["Timeout"]
    assert functions["asya-reviews-split"]["Timeout"] == 10 * 10 + 10, "a whole batch of 10 at 10 s each fits"


def test_queues_are_encrypted_and_tls_only(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    _, document, _ = synthesized
    assert all(q["SqsManagedSseEnabled"] for q in resources(document, "AWS::SQS::Queue").values())
    policies = resources(document, "AWS::SQS::QueuePolicy")
    assert len(policies) == 11
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
    [policy] = resources(document, "AWS::S3::BucketPolicy").values()
    assert policy["PolicyDocument"]["Statement"][0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    )


def test_actor_roles_are_least_privilege(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    _, document, _ = synthesized
    for actor in ACTORS:
        statements = role_statements(document, f"MeshActor{actor}Role")
        actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        assert not any(a.endswith(":*") or a == "*" for a in actions)
        claims = [s for s in statements if any("s3:" in a for a in _listed(s["Action"]))]
        assert [(s["Action"], s["Resource"]["Fn::Join"][1][-1]) for s in claims] == [
            (["s3:GetObject", "s3:PutObject"], "/claims/reviews/*")
        ], "actors touch the bucket only for large payloads, their namespace's, and never results"
        [send] = managed_statements(document, f"MeshActor{actor}Role")
        assert "sqs:SendMessage" in send["Action"]
        assert sorted(queue_names(send)) == sorted(
            [f"asya-reviews-{name}" for name in (*ACTORS, "x-sink", "x-sump", "x-pause")]
        ), "every actor's queue and the crew it routes to, by name: never x-resume, never a wildcard"
        items = next(s for s in statements if "dynamodb:DeleteItem" in s["Action"])
        assert items["Resource"] == {"Fn::GetAtt": [table_of(document, "Idempotency"), "Arn"]}
        assert items["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["asya-reviews#*"]}}
        consume = next(s for s in statements if "sqs:ReceiveMessage" in s["Action"])
        assert consume["Resource"] == {"Fn::GetAtt": [queue_of(document, f"asya-reviews-{actor}")[0], "Arn"]}
        assert all(s["Resource"] != "*" for s in statements)
    for crew in ("xsink", "xsump"):
        puts = [s for s in role_statements(document, f"MeshCrew{crew}Role") if s["Action"] == "s3:PutObject"]
        assert len(puts) == 1
        assert puts[0]["Resource"]["Fn::Join"][1][-1] == "/results/reviews/*"
        reads = [s for s in role_statements(document, f"MeshCrew{crew}Role") if s["Action"] == "s3:GetObject"]
        assert [s["Resource"]["Fn::Join"][1][-1] for s in reads] == ["/claims/reviews/*"], "keepers read payloads"
    resume = role_statements(document, "MeshCrewxresumeRole")
    claims = [s for s in resume if any("s3:" in a for a in _listed(s["Action"]))]
    assert [(s["Action"], s["Resource"]["Fn::Join"][1][-1]) for s in claims] == [
        (["s3:GetObject", "s3:PutObject"], "/claims/reviews/*")
    ], "x-resume reads a payload for a flow program to decide on, and sends it on"


def _listed(action: str | list[str]) -> list[str]:
    return [action] if isinstance(action, str) else action


def test_a_join_gathers_in_its_own_table_and_its_sources_know_it(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    """The joins table is the join actor's alone (keep, count, read a fan back; no scan, no delete);
    its source is told which joins gather its branches, the join its policy and table."""
    _, document, _ = synthesized
    joins_key = table_of(document, "Joins")
    joins = resources(document, "AWS::DynamoDB::Table")[joins_key]
    assert joins["TableName"] == "asya-reviews-joins"
    assert joins["KeySchema"] == [
        {"AttributeName": "fan", "KeyType": "HASH"},
        {"AttributeName": "slot", "KeyType": "RANGE"},
    ]
    assert joins["SSESpecification"] == {"SSEEnabled": True}
    assert joins["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    table = {"Fn::GetAtt": [joins_key, "Arn"]}
    for actor in ACTORS:
        granted = statements_on(role_statements(document, f"MeshActor{actor}Role"), table)
        if actor == "summarise":
            assert actions_of(granted) == {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
        else:
            assert granted == [], f"{actor} is no join: it never touches the joins table"
    functions = functions_of(document)
    summarise = functions["asya-reviews-summarise"]["Environment"]["Variables"]
    assert (summarise["ASYA_JOIN"], summarise["ASYA_JOINS_TABLE"]) == ('{"tolerate":"25%"}', {"Ref": joins_key})
    assert functions["asya-reviews-split"]["Environment"]["Variables"]["ASYA_JOINED_BY"] == "summarise"
    assert "ASYA_JOINED_BY" not in functions["asya-reviews-score"]["Environment"]["Variables"]


def test_event_sources_report_partial_batch_failures_with_configured_settings(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    template, document, _ = synthesized
    mappings = resources(document, "AWS::Lambda::EventSourceMapping")
    assert len(mappings) == 10, "9 queues (actors and crew) and the tasks table's stream"
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
    alarms = {a["AlarmName"]: a for a in resources(document, "AWS::CloudWatch::Alarm").values()}
    assert set(alarms) == {
        "asya-reviews-x-sump-arrivals",
        "asya-reviews-x-sump-dlq-depth",
        "asya-reviews-gateway-stream-dlq-depth",
        "asya-reviews-function-errors-1",
        "asya-reviews-function-errors-2",
    }
    # every function's Lambda errors, at most ten metrics per alarm (CloudWatch's limit for metric math)
    functions = set(resources(document, "AWS::Lambda::Function"))
    watched: set[str] = set()
    for number in (1, 2):
        queries = alarms[f"asya-reviews-function-errors-{number}"]["Metrics"]
        metrics = [q["MetricStat"]["Metric"] for q in queries if "MetricStat" in q]
        assert 1 <= len(metrics) <= 10
        assert {m["MetricName"] for m in metrics} == {"Errors"}
        watched |= {m["Dimensions"][0]["Value"]["Ref"] for m in metrics}
    assert watched == functions
    stream_dlq, _ = queue_of(document, "asya-reviews-gateway-stream-dlq")
    assert stream_dlq in json.dumps(alarms["asya-reviews-gateway-stream-dlq-depth"])
    arrivals = json.dumps(alarms["asya-reviews-x-sump-arrivals"])
    assert '"MetricName": "SumpArrivals"' in arrivals
    assert '"Value": "x-sump"' in arrivals
    body = json.dumps(resources(document, "AWS::CloudWatch::Dashboard"))
    for needle in (
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
        "MessagesFailed",
        "HandlerDuration",
        "SumpArrivals",
        "TasksCreated",
        "5XXError",
        "Latency",
    ):
        assert needle in body
    [dashboard] = resources(document, "AWS::CloudWatch::Dashboard").values()
    text = "".join(part for part in dashboard["DashboardBody"]["Fn::Join"][1] if isinstance(part, str))
    for outcome in ("succeeded", "failed", "canceled"):
        assert f'"Asya","TasksFinished","actor","gateway-stream","mesh","reviews","outcome","{outcome}"' in text
    assert '"Asya","TasksCreated","actor","gateway-stream","mesh","reviews"' in text


def test_every_function_keeps_lambdas_platform_lines_at_warn_and_its_own_at_the_default_level(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    """No start and report line per successful invocation (docs/cost.md); the application's level is
    left to Lambda's default, so the functions' own lines and metric lines are kept as before."""
    _, document, _ = synthesized
    functions = functions_of(document)
    assert set(functions) == {f"asya-reviews-{a}" for a in (*ACTORS, *CREW, *GATEWAY)}
    for name, function in functions.items():
        assert function["LoggingConfig"]["LogFormat"] == "JSON", name
        assert function["LoggingConfig"]["SystemLogLevel"] == "WARN", name
        assert "ApplicationLogLevel" not in function["LoggingConfig"], name


def test_an_actor_and_the_gateway_take_the_system_log_level_the_mesh_gives_them(
    with_api_keys: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = with_api_keys
    levels = {name: f["LoggingConfig"]["SystemLogLevel"] for name, f in functions_of(document).items()}
    assert levels["asya-reviews-score"] == "DEBUG"
    assert {levels[f"asya-reviews-{name}"] for name in GATEWAY} == {"INFO"}
    assert levels["asya-reviews-split"] == levels["asya-reviews-x-sink"] == "WARN", "the others keep the default"


def test_the_stack_and_every_resource_record_the_installed_release(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    """The version `asya --version` prints: the stack's output, its own tag (which `cdk deploy` hands
    CloudFormation from the assembly's manifest) and every taggable resource's tag."""
    _, document, outdir = synthesized
    installed = version(DISTRIBUTION)
    assert document["Outputs"][VERSION_OUTPUT]["Value"] == installed
    manifest = json.loads((outdir / "manifest.json").read_text())
    assert manifest["artifacts"]["asya-reviews"]["properties"]["tags"] == {VERSION_TAG: installed}
    tagged = version_tags(document)
    assert set(tagged.values()) == {installed}
    kinds = {document["Resources"][key]["Type"] for key in tagged}
    assert {"AWS::SQS::Queue", "AWS::Lambda::Function", "AWS::IAM::Role", "AWS::DynamoDB::Table"} <= kinds


@pytest.mark.parametrize("variant", ["synthesized", "with_api_keys"])
def test_cfn_lint_passes(variant: str, request: pytest.FixtureRequest) -> None:
    _, _, outdir = request.getfixturevalue(variant)
    result = cfn_lint(outdir / "asya-reviews.template.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_cdk_app_refuses_a_bad_mesh_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "mesh.yaml"
    bad.write_text("namespace: demo\nactors:\n  a: {handler: m.f, code: ., batch_sise: 5}\n")
    result = run_cdk_app(bad, tmp_path / "out")
    assert result.returncode != 0
    assert f"{bad}: actors.a.batch_sise: not a field; did you mean `batch_size`?" in result.stderr
