"""The synthesized template: names, redrive, encryption, IAM scope, event sources, the status gateway,
dashboard, alarms, with cdk-nag (AwsSolutions) and cfn-lint run on it."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Match, Template

from asya.names import DISTRIBUTION, VERSION_OUTPUT, VERSION_TAG
from asya_cdk.access_logs import REST_ACCESS_LOG_FIELDS
from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local.functions.stage_throttle import template_opens_well_known
from tests.support.templates import (
    ROOT,
    actions_of,
    cfn_lint,
    managed_statements,
    queue_names,
    resources,
    role_statements,
    run_cdk_app,
    synthesize,
    version_tags,
)

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ACTORS = ("split", "score", "triage", "escalate", "summarise")
CREW = ("x-sink", "x-sump", "x-pause", "x-resume")
GATEWAY = ("gateway", "gateway-stream", "gateway-backstop")


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, dict[str, Any], Path]:
    return synthesize(load_mesh(EXAMPLE), tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="module")
def with_api_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, dict[str, Any], Path]:
    """The example mesh with every gateway setting changed and every status point written."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["gateway"] = {
        "auth": "api_key",
        "task_ttl_days": 2,
        "backstop_minutes": 5,
        "tracing": True,
        "cloudwatch_role": False,
        "ownership": "session",
        "a2a": {"public_card": "off"},
    }
    document["gateway"]["system_log_level"] = "INFO"
    document["status"] = {"writes": "every-point"}
    document["actors"]["score"]["tracing"] = True
    document["actors"]["score"]["system_log_level"] = "DEBUG"
    mesh = LoadedMesh(config=MeshConfig.model_validate(document), base=EXAMPLE.parent)
    return synthesize(mesh, tmp_path_factory.mktemp("cdk.out"))


def _queue(document: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    return next((key, q) for key, q in resources(document, "AWS::SQS::Queue").items() if q["QueueName"] == name)


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
    sump_key, sump = _queue(document, "asya-reviews-x-sump")
    dlq_key, _ = _queue(document, "asya-reviews-x-sump-dlq")
    for name in (*ACTORS, "x-sink", "x-pause", "x-resume"):
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
    functions = {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}
    for name in (*ACTORS, *CREW):
        _, queue = _queue(document, f"asya-reviews-{name}")
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
        assert items["Resource"] == {"Fn::GetAtt": [_table(document, "Idempotency"), "Arn"]}
        assert items["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["asya-reviews#*"]}}
        consume = next(s for s in statements if "sqs:ReceiveMessage" in s["Action"])
        assert consume["Resource"] == {"Fn::GetAtt": [_queue(document, f"asya-reviews-{actor}")[0], "Arn"]}
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
    joins_key = _table(document, "Joins")
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
        granted = _on(role_statements(document, f"MeshActor{actor}Role"), table)
        if actor == "summarise":
            assert actions_of(granted) == {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
        else:
            assert granted == [], f"{actor} is no join: it never touches the joins table"
    functions = _functions(document)
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
    stream_dlq, _ = _queue(document, "asya-reviews-gateway-stream-dlq")
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


def _secret(document: dict[str, Any], name: str) -> str:
    """The logical id of the mesh's generated secret whose id contains `name`."""
    [found] = [logical for logical in resources(document, "AWS::SecretsManager::Secret") if name in logical]
    return found


def _table(document: dict[str, Any], prefix: str) -> str:
    return next(key for key in resources(document, "AWS::DynamoDB::Table") if key.startswith(f"Mesh{prefix}"))


def _functions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}


def _on(statements: list[dict[str, Any]], resource: Any) -> list[dict[str, Any]]:
    return [
        s
        for s in statements
        if s["Resource"] == resource or (isinstance(s["Resource"], list) and resource in s["Resource"])
    ]


def _index(document: dict[str, Any], name: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [{"Fn::GetAtt": [_table(document, "StatusTasks"), "Arn"]}, f"/index/{name}"]]}


def test_task_tables_have_their_keys_indexes_stream_ttl_and_recovery(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    tables = resources(document, "AWS::DynamoDB::Table")
    assert len(tables) == 5, "idempotency, tasks, task events, sump, joins"
    tasks_key, events_key = _table(document, "StatusTasks"), _table(document, "StatusTaskEvents")
    sump_key = _table(document, "StatusSump")
    tasks, events, sump = tables[tasks_key], tables[events_key], tables[sump_key]
    for table in (tasks, events, sump):
        assert table["BillingMode"] == "PAY_PER_REQUEST"
        assert table["SSESpecification"] == {"SSEEnabled": True}
        assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    for table in (tasks, events):
        assert {a["AttributeType"] for a in table["AttributeDefinitions"]} == {"S"}
    for key in (tasks_key, events_key, sump_key):
        assert document["Resources"][key]["DeletionPolicy"] == "Delete"
    assert sump["TableName"] == "asya-reviews-sump"
    assert sump["KeySchema"] == [
        {"AttributeName": "id", "KeyType": "HASH"},
        {"AttributeName": "redrives", "KeyType": "RANGE"},
    ]
    assert tasks["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert tasks["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    indexes = {index["IndexName"]: index for index in tasks["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"by-status", "by-deadline", "by-id-prefix"}
    assert indexes["by-status"]["KeySchema"] == [
        {"AttributeName": "status", "KeyType": "HASH"},
        {"AttributeName": "created_at", "KeyType": "RANGE"},
    ]
    assert indexes["by-status"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert indexes["by-deadline"]["KeySchema"] == [
        {"AttributeName": "open_shard", "KeyType": "HASH"},
        {"AttributeName": "deadline_at", "KeyType": "RANGE"},
    ]
    assert indexes["by-deadline"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert indexes["by-id-prefix"]["KeySchema"] == [  # short ids, whatever their case (`asya.short_ids`)
        {"AttributeName": "id_head", "KeyType": "HASH"},
        {"AttributeName": "id_lower", "KeyType": "RANGE"},
    ]
    assert indexes["by-id-prefix"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert events["KeySchema"] == [
        {"AttributeName": "task_id", "KeyType": "HASH"},
        {"AttributeName": "seq", "KeyType": "RANGE"},
    ]
    assert "StreamSpecification" not in events
    assert "GlobalSecondaryIndexes" not in events


def test_gateway_functions_get_the_tables_the_flows_and_their_own_logs(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    functions = _functions(document)
    tables = {"ASYA_TASKS_TABLE": {"Ref": _table(document, "StatusTasks")}}
    tables["ASYA_EVENTS_TABLE"] = {"Ref": _table(document, "StatusTaskEvents")}
    bucket = next(iter(resources(document, "AWS::S3::Bucket")))
    gateway = functions["asya-reviews-gateway"]
    assert (gateway["Handler"], gateway["Timeout"], gateway["MemorySize"]) == (
        "asya_gateway.api.lambda_handler",
        30,
        512,
    )
    variables = gateway["Environment"]["Variables"]
    fly = next(iter(resources(document, "AWS::AppSync::Api")))  # FLY's fast lane (tests/cdk/test_fly_api.py)
    assert variables == {
        "ASYA_NAMESPACE": "reviews",
        **tables,
        "ASYA_TASK_TTL_SECONDS": str(7 * 86_400),
        "ASYA_RESULTS_BUCKET": {"Ref": bucket},
        "ASYA_FLOWS": variables["ASYA_FLOWS"],
        "ASYA_SUMP_TABLE": {"Ref": _table(document, "StatusSump")},
        "ASYA_GATEWAY_AUTH": '{"mode":"iam","admins":{"scopes":[],"roles":[],"principals":[]},'
        '"ownership":"role","public_card":"minimal"}',
        "ASYA_CLAIM_BUCKET": {"Ref": bucket},
        "ASYA_CLAIM_CHECK_BYTES": "458752",
        "POWERTOOLS_SERVICE_NAME": "gateway",
        "ASYA_GATEWAY_CURSOR_SECRET": {"Ref": _secret(document, "CursorSecret")},
        "ASYA_SEAL_SECRET": {"Ref": _secret(document, "SealSecret")},
        "ASYA_FLY_DOMAIN": {"Fn::GetAtt": [fly, "Dns.Http"]},
        "ASYA_FLY_REALTIME_DOMAIN": {"Fn::GetAtt": [fly, "Dns.Realtime"]},
    }
    declared = yaml.safe_load(EXAMPLE.read_text())["flows"]
    assert json.loads(variables["ASYA_FLOWS"]) == {
        name: {
            "route": route,
            "description": declared[name]["description"],
            "timeout": 300.0,
            "input_schema": declared[name]["input_schema"],
        }
        for name, route in (
            ("triage-reviews", ["split", "score", "triage"]),
            ("summarise-reviews", ["split", "score", "summarise"]),
        )
    }
    stream = functions["asya-reviews-gateway-stream"]
    assert stream["Handler"] == "asya_gateway.stream.lambda_handler"
    assert stream["Environment"]["Variables"] == {
        "ASYA_NAMESPACE": "reviews",
        **tables,
        "ASYA_TASK_TTL_SECONDS": str(7 * 86_400),
        "POWERTOOLS_SERVICE_NAME": "gateway-stream",
    }
    backstop = functions["asya-reviews-gateway-backstop"]
    assert (backstop["Handler"], backstop["Timeout"]) == ("asya_gateway.backstop.lambda_handler", 60)
    assert "ASYA_FLOWS" not in backstop["Environment"]["Variables"]
    assert backstop["Environment"]["Variables"].items() >= tables.items()
    log_groups = {g["LogGroupName"] for g in resources(document, "AWS::Logs::LogGroup").values()}
    for name in GATEWAY:
        function = functions[f"asya-reviews-{name}"]
        assert function["Layers"]
        assert function["Architectures"] == ["arm64"]
        assert function["Runtime"] == functions["asya-reviews-x-sink"]["Runtime"]
        assert function["LoggingConfig"]["LogFormat"] == "JSON"
        assert f"/aws/lambda/asya-reviews-{name}" in log_groups
        role = function["Role"]["Fn::GetAtt"][0]
        managed = document["Resources"][role]["Properties"].get("ManagedPolicyArns", [])
        assert all(arn["Ref"] in resources(document, "AWS::IAM::ManagedPolicy") for arn in managed), "the mesh's own"


def test_actors_and_crew_report_status_with_the_tables_and_the_shared_settings(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    functions = _functions(document)
    tasks, events = _table(document, "StatusTasks"), _table(document, "StatusTaskEvents")
    for name in (*ACTORS, *CREW):
        variables = functions[f"asya-reviews-{name}"]["Environment"]["Variables"]
        assert variables["ASYA_TASKS_TABLE"] == {"Ref": tasks}
        assert variables["ASYA_EVENTS_TABLE"] == {"Ref": events}
        assert variables["ASYA_TASK_TTL_SECONDS"] == str(7 * 86_400)
    for actor in ACTORS:
        assert functions[f"asya-reviews-{actor}"]["Environment"]["Variables"]["ASYA_STATUS_WRITES"] == "coalesced"
    sump = {"Ref": _table(document, "StatusSump")}
    assert [
        name
        for name in (*ACTORS, *CREW)
        if "ASYA_SUMP_TABLE" in functions[f"asya-reviews-{name}"]["Environment"]["Variables"]
    ] == ["x-sump"]
    assert functions["asya-reviews-x-sump"]["Environment"]["Variables"]["ASYA_SUMP_TABLE"] == sump
    for role in [f"MeshActor{a}Role" for a in ACTORS] + [f"MeshCrew{c.replace('-', '')}Role" for c in CREW]:
        statements = role_statements(document, role)
        assert actions_of(_on(statements, {"Fn::GetAtt": [tasks, "Arn"]})) == {
            "dynamodb:UpdateItem",
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
        }, role
        assert actions_of(_on(statements, {"Fn::GetAtt": [events, "Arn"]})) == {
            "dynamodb:PutItem",
            "dynamodb:BatchWriteItem",
        }, role
        assert not any(a.startswith("dynamodb:") and a.endswith("*") for a in actions_of(statements)), role
        assert not any("/index/" in json.dumps(s["Resource"]) for s in statements), role
    pause_puts = [s for s in role_statements(document, "MeshCrewxpauseRole") if s["Action"] == "s3:PutObject"]
    assert pause_puts[0]["Resource"]["Fn::Join"][1][-1] == "/results/reviews/*"
    resume_s3 = {a for a in actions_of(role_statements(document, "MeshCrewxresumeRole")) if "s3:" in a}
    assert resume_s3 == {"s3:GetObject", "s3:PutObject"}, "claim-checked payloads only (test above)"


def test_gateway_roles_are_scoped_to_what_each_function_does(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    tasks = {"Fn::GetAtt": [_table(document, "StatusTasks"), "Arn"]}
    events = {"Fn::GetAtt": [_table(document, "StatusTaskEvents"), "Arn"]}
    gateway = role_statements(document, "MeshGatewayApiRole")
    assert actions_of(_on(gateway, tasks)) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:Scan",
    }
    assert actions_of(_on(gateway, _index(document, "by-status"))) == {"dynamodb:Query"}
    assert actions_of(_on(gateway, _index(document, "by-id-prefix"))) == {"dynamodb:Query"}
    assert actions_of(_on(gateway, events)) == {"dynamodb:Query", "dynamodb:PutItem", "dynamodb:BatchWriteItem"}
    [read] = [s for s in gateway if s["Action"] == "s3:GetObject"]
    assert read["Resource"]["Fn::Join"][1][-1] == "/results/reviews/*"
    [send] = managed_statements(document, "MeshGatewayApiRole")
    assert sorted(queue_names(send)) == sorted(f"asya-reviews-{name}" for name in (*ACTORS, *CREW))
    for secret in ("CursorSecret", "SealSecret"):  # the cursors' key, the envelopes' seal
        assert actions_of(_on(gateway, {"Ref": _secret(document, secret)})) == {
            "secretsmanager:GetSecretValue",
            "secretsmanager:DescribeSecret",
        }, secret
    stream = role_statements(document, "MeshGatewayStreamRole")
    assert not _on(stream, tasks), "the stream consumer reads the stream, never the table"
    assert actions_of(_on(stream, events)) == {"dynamodb:PutItem", "dynamodb:BatchWriteItem"}
    backstop = role_statements(document, "MeshGatewayBackstopRole")
    assert actions_of(_on(backstop, tasks)) == {"dynamodb:GetItem", "dynamodb:UpdateItem"}
    assert actions_of(_on(backstop, _index(document, "by-deadline"))) == {"dynamodb:Query"}
    assert not _on(backstop, _index(document, "by-status"))
    assert not _on(backstop, _index(document, "by-id-prefix")), "the gateway alone finds tasks by short id"
    assert not any(a.startswith("secretsmanager:") for a in actions_of([*stream, *backstop]))
    for statements in (gateway, stream, backstop):
        actions = actions_of(statements)
        assert not any(a.endswith(":*") or a == "*" or "Delete" in a for a in actions)
        wide = [s for s in statements if s["Resource"] == "*"]
        assert all(s["Action"] == "dynamodb:ListStreams" for s in wide)


TICKET_PARAMETER = "method.request.querystring.ticket"


def _card_methods(document: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The API's methods: the greedy proxy's (every path), and the A2A agent card's (readable by anyone);
    the follow ticket's stream (`_ticket_stream`) is neither."""
    methods = list(resources(document, "AWS::ApiGateway::Method").values())
    cards = [m for m in methods if m["HttpMethod"] == "GET" and TICKET_PARAMETER not in m.get("RequestParameters", {})]
    return [method for method in methods if method["HttpMethod"] not in ("GET", "OPTIONS")], cards


def _ticket_stream(document: dict[str, Any]) -> dict[str, Any]:
    [method] = [
        m
        for m in resources(document, "AWS::ApiGateway::Method").values()
        if TICKET_PARAMETER in m.get("RequestParameters", {})
    ]
    return method


def test_a_follow_ticket_opens_one_unauthorized_method_that_demands_the_ticket(
    synthesized: tuple[Template, dict[str, Any], Path],
    with_api_keys: tuple[Template, dict[str, Any], Path],
) -> None:
    """`GET /follow/{id}?ticket=`: a browser's EventSource sends no signature or key, so the method takes
    none, and API Gateway refuses a request without `ticket` before the function (which opens the ticket)
    runs. Top-level: under `/api/v1/...` it would take those paths from the greedy proxy."""
    for _, document, _ in (synthesized, with_api_keys):
        method = _ticket_stream(document)
        assert (method["HttpMethod"], method["AuthorizationType"], method["ApiKeyRequired"]) == ("GET", "NONE", False)
        assert method["RequestParameters"] == {TICKET_PARAMETER: True}
        assert method["Integration"]["Type"] == "AWS_PROXY"
        [validator] = resources(document, "AWS::ApiGateway::RequestValidator").values()
        assert method["RequestValidatorId"] == {
            "Ref": next(iter(resources(document, "AWS::ApiGateway::RequestValidator")))
        }
        assert validator["ValidateRequestParameters"] is True
        by_id = resources(document, "AWS::ApiGateway::Resource")
        task = by_id[method["ResourceId"]["Ref"]]
        assert task["PathPart"] == "{id}"
        follow = by_id[task["ParentId"]["Ref"]]
        assert follow["PathPart"] == "follow"
        assert "Fn::GetAtt" in follow["ParentId"], "a child of the API's root"


def test_api_methods_require_iam_by_default_behind_one_greedy_proxy(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    [api] = resources(document, "AWS::ApiGateway::RestApi").values()
    assert api["Name"] == "asya-reviews"
    assert api["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
    parts = [r["PathPart"] for r in resources(document, "AWS::ApiGateway::Resource").values()]
    assert sorted(parts) == sorted(["{proxy+}", ".well-known", "{proxy+}", "follow", "{id}"])
    methods, cards = _card_methods(document)
    assert len(methods) == 2, "ANY / and ANY /{proxy+}"
    for method in methods:
        assert (method["HttpMethod"], method["AuthorizationType"], method["ApiKeyRequired"]) == (
            "ANY",
            "AWS_IAM",
            False,
        )
        assert method["Integration"]["Type"] == "AWS_PROXY"
    assert len(cards) == 1, "GET /.well-known/{proxy+}: the A2A agent card, at A2A 1.0's path and 0.3's"
    assert template_opens_well_known([document]), "the local gateway lets the card be read without the key"
    for method in cards:
        assert (method["HttpMethod"], method["AuthorizationType"], method["ApiKeyRequired"]) == ("GET", "NONE", False)
        assert method["Integration"]["Type"] == "AWS_PROXY"
    assert not resources(document, "AWS::ApiGateway::UsagePlan")
    assert not resources(document, "AWS::ApiGateway::ApiKey")
    assert not resources(document, "AWS::ApiGatewayV2::Api"), "api: rest (the default) makes no HTTP API"
    [stage] = resources(document, "AWS::ApiGateway::Stage").values()
    assert stage["StageName"] == "api"
    assert "DestinationArn" in stage["AccessLogSetting"]
    assert json.loads(stage["AccessLogSetting"]["Format"]) == REST_ACCESS_LOG_FIELDS, "as the cost bench sizes it"
    assert stage["MethodSettings"][0]["LoggingLevel"] == "ERROR"
    outputs = document["Outputs"]
    assert {"ResultsBucket", "Dashboard", "ApiUrl", "GatewayAuth", "TasksTable", "EventsTable", "AsyaVersion"} == set(
        outputs
    )
    assert outputs["GatewayAuth"]["Value"] == "iam", "how `asya --stack` knows to sign with SigV4"
    assert outputs["ApiUrl"]["Value"]["Fn::Join"][1][0] == "https://"
    [account] = resources(document, "AWS::ApiGateway::Account").values()
    assert "CloudWatchRoleArn" in account


def test_api_keys_replace_iam_when_the_mesh_asks_for_them(
    with_api_keys: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = with_api_keys
    methods, cards = _card_methods(document)
    for method in methods:
        assert (method["AuthorizationType"], method["ApiKeyRequired"]) == ("NONE", True)
    assert cards == [], "public_card: off: nothing is read without the key, API Gateway refuses it unasked"
    assert not template_opens_well_known([document]), "and the local gateway refuses it as well"
    [plan_key, *_] = resources(document, "AWS::ApiGateway::UsagePlan")
    plan = resources(document, "AWS::ApiGateway::UsagePlan")[plan_key]
    [api_key] = resources(document, "AWS::ApiGateway::RestApi")
    assert plan["ApiStages"][0]["ApiId"] == {"Ref": api_key}
    [key_id] = resources(document, "AWS::ApiGateway::ApiKey")
    [link] = resources(document, "AWS::ApiGateway::UsagePlanKey").values()
    assert (link["KeyId"], link["UsagePlanId"], link["KeyType"]) == ({"Ref": key_id}, {"Ref": plan_key}, "API_KEY")
    assert document["Outputs"]["ApiKeyId"]["Value"] == {"Ref": key_id}
    assert document["Outputs"]["GatewayAuth"]["Value"] == "api_key"
    functions = _functions(document)
    assert functions["asya-reviews-gateway"]["Environment"]["Variables"]["ASYA_TASK_TTL_SECONDS"] == str(2 * 86_400)
    auth = json.loads(functions["asya-reviews-gateway"]["Environment"]["Variables"]["ASYA_GATEWAY_AUTH"])
    assert (auth["ownership"], auth["public_card"]) == ("session", "off")
    assert functions["asya-reviews-score"]["Environment"]["Variables"]["ASYA_STATUS_WRITES"] == "every-point"
    [rule] = resources(document, "AWS::Events::Rule").values()
    assert rule["ScheduleExpression"] == "rate(5 minutes)"
    assert not resources(document, "AWS::ApiGateway::Account"), "cloudwatch_role: false leaves the account alone"
    [stage] = resources(document, "AWS::ApiGateway::Stage").values()
    assert stage["TracingEnabled"] is True
    for name in (*GATEWAY, "score"):
        assert functions[f"asya-reviews-{name}"]["TracingConfig"] == {"Mode": "Active"}
    for name in ("gateway", "score"):  # the create writes the task's root segment, the actor its hops'
        assert functions[f"asya-reviews-{name}"]["Environment"]["Variables"]["ASYA_TRACING"] == "true"
    assert "ASYA_TRACING" not in functions["asya-reviews-x-sink"]["Environment"]["Variables"], "no mesh switch"


def test_every_function_keeps_lambdas_platform_lines_at_warn_and_its_own_at_the_default_level(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    """No start and report line per successful invocation (docs/cost.md); the application's level is
    left to Lambda's default, so the functions' own lines and metric lines are kept as before."""
    _, document, _ = synthesized
    functions = _functions(document)
    assert set(functions) == {f"asya-reviews-{a}" for a in (*ACTORS, *CREW, *GATEWAY)}
    for name, function in functions.items():
        assert function["LoggingConfig"]["LogFormat"] == "JSON", name
        assert function["LoggingConfig"]["SystemLogLevel"] == "WARN", name
        assert "ApplicationLogLevel" not in function["LoggingConfig"], name


def test_an_actor_and_the_gateway_take_the_system_log_level_the_mesh_gives_them(
    with_api_keys: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = with_api_keys
    levels = {name: f["LoggingConfig"]["SystemLogLevel"] for name, f in _functions(document).items()}
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


def test_the_stream_consumer_bisects_reports_and_keeps_what_it_cannot_write(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    tasks = _table(document, "StatusTasks")
    dlq, queue = _queue(document, "asya-reviews-gateway-stream-dlq")
    assert queue["SqsManagedSseEnabled"]
    [mapping] = [m for m in resources(document, "AWS::Lambda::EventSourceMapping").values() if "StartingPosition" in m]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [tasks, "StreamArn"]}
    assert mapping["FunctionName"]["Ref"].startswith("MeshGatewayStreamFunction")
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BatchSize"] == 100
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == 5
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq, "Arn"]}}}
    # a wide fan-out's buckets and counters are filtered out before an invocation (H15)
    [criterion] = mapping["FilterCriteria"]["Filters"]
    assert json.loads(criterion["Pattern"]) == {"dynamodb": {"NewImage": {"fan_root": {"S": [{"exists": False}]}}}}


def test_the_backstop_runs_on_a_schedule(synthesized: tuple[Template, dict[str, Any], Path]) -> None:
    _, document, _ = synthesized
    [rule] = resources(document, "AWS::Events::Rule").values()
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    [target] = rule["Targets"]
    assert target["Arn"]["Fn::GetAtt"][0].startswith("MeshGatewayBackstopFunction")
    [invoke] = resources(document, "AWS::Lambda::EventInvokeConfig").values()
    assert invoke["MaximumRetryAttempts"] == 0, "the next run is the retry"


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
