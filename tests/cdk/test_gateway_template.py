"""The synthesized template's status gateway: the task tables, the gateway's functions and their roles, the
settings actors and crew report status with, the API's methods (IAM, API keys, a follow ticket's open
method), the stream consumer and the backstop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from aws_cdk.assertions import Template

from asya_cdk.access_logs import REST_ACCESS_LOG_FIELDS
from asya_local.functions.stage_throttle import template_opens_well_known
from tests.support.reviews_template import (
    ACTORS,
    CREW,
    EXAMPLE,
    GATEWAY,
    functions_of,
    queue_of,
    statements_on,
    table_of,
)
from tests.support.templates import (
    actions_of,
    managed_statements,
    queue_names,
    resources,
    role_statements,
)


def _secret(document: dict[str, Any], name: str) -> str:
    """The logical id of the mesh's generated secret whose id contains `name`."""
    [found] = [logical for logical in resources(document, "AWS::SecretsManager::Secret") if name in logical]
    return found


def _index(document: dict[str, Any], name: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [{"Fn::GetAtt": [table_of(document, "StatusTasks"), "Arn"]}, f"/index/{name}"]]}


def test_task_tables_have_their_keys_indexes_stream_ttl_and_recovery(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    tables = resources(document, "AWS::DynamoDB::Table")
    assert len(tables) == 5, "idempotency, tasks, task events, sump, joins"
    tasks_key, events_key = table_of(document, "StatusTasks"), table_of(document, "StatusTaskEvents")
    sump_key = table_of(document, "StatusSump")
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
    functions = functions_of(document)
    tables = {"ASYA_TASKS_TABLE": {"Ref": table_of(document, "StatusTasks")}}
    tables["ASYA_EVENTS_TABLE"] = {"Ref": table_of(document, "StatusTaskEvents")}
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
        "ASYA_SUMP_TABLE": {"Ref": table_of(document, "StatusSump")},
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
    functions = functions_of(document)
    tasks, events = table_of(document, "StatusTasks"), table_of(document, "StatusTaskEvents")
    for name in (*ACTORS, *CREW):
        variables = functions[f"asya-reviews-{name}"]["Environment"]["Variables"]
        assert variables["ASYA_TASKS_TABLE"] == {"Ref": tasks}
        assert variables["ASYA_EVENTS_TABLE"] == {"Ref": events}
        assert variables["ASYA_TASK_TTL_SECONDS"] == str(7 * 86_400)
    for actor in ACTORS:
        assert functions[f"asya-reviews-{actor}"]["Environment"]["Variables"]["ASYA_STATUS_WRITES"] == "coalesced"
    sump = {"Ref": table_of(document, "StatusSump")}
    assert [
        name
        for name in (*ACTORS, *CREW)
        if "ASYA_SUMP_TABLE" in functions[f"asya-reviews-{name}"]["Environment"]["Variables"]
    ] == ["x-sump"]
    assert functions["asya-reviews-x-sump"]["Environment"]["Variables"]["ASYA_SUMP_TABLE"] == sump
    for role in [f"MeshActor{a}Role" for a in ACTORS] + [f"MeshCrew{c.replace('-', '')}Role" for c in CREW]:
        statements = role_statements(document, role)
        assert actions_of(statements_on(statements, {"Fn::GetAtt": [tasks, "Arn"]})) == {
            "dynamodb:UpdateItem",
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
        }, role
        assert actions_of(statements_on(statements, {"Fn::GetAtt": [events, "Arn"]})) == {
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
    tasks = {"Fn::GetAtt": [table_of(document, "StatusTasks"), "Arn"]}
    events = {"Fn::GetAtt": [table_of(document, "StatusTaskEvents"), "Arn"]}
    gateway = role_statements(document, "MeshGatewayApiRole")
    assert actions_of(statements_on(gateway, tasks)) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:Scan",
    }
    assert actions_of(statements_on(gateway, _index(document, "by-status"))) == {"dynamodb:Query"}
    assert actions_of(statements_on(gateway, _index(document, "by-id-prefix"))) == {"dynamodb:Query"}
    assert actions_of(statements_on(gateway, events)) == {
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:BatchWriteItem",
    }
    [read] = [s for s in gateway if s["Action"] == "s3:GetObject"]
    assert read["Resource"]["Fn::Join"][1][-1] == "/results/reviews/*"
    [send] = managed_statements(document, "MeshGatewayApiRole")
    assert sorted(queue_names(send)) == sorted(f"asya-reviews-{name}" for name in (*ACTORS, *CREW))
    for secret in ("CursorSecret", "SealSecret"):  # the cursors' key, the envelopes' seal
        assert actions_of(statements_on(gateway, {"Ref": _secret(document, secret)})) == {
            "secretsmanager:GetSecretValue",
            "secretsmanager:DescribeSecret",
        }, secret
    stream = role_statements(document, "MeshGatewayStreamRole")
    assert not statements_on(stream, tasks), "the stream consumer reads the stream, never the table"
    assert actions_of(statements_on(stream, events)) == {"dynamodb:PutItem", "dynamodb:BatchWriteItem"}
    backstop = role_statements(document, "MeshGatewayBackstopRole")
    assert actions_of(statements_on(backstop, tasks)) == {"dynamodb:GetItem", "dynamodb:UpdateItem"}
    assert actions_of(statements_on(backstop, _index(document, "by-deadline"))) == {"dynamodb:Query"}
    assert not statements_on(backstop, _index(document, "by-status"))
    assert not statements_on(backstop, _index(document, "by-id-prefix")), "the gateway alone finds tasks by short id"
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
    functions = functions_of(document)
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


def test_the_stream_consumer_bisects_reports_and_keeps_what_it_cannot_write(
    synthesized: tuple[Template, dict[str, Any], Path],
) -> None:
    _, document, _ = synthesized
    tasks = table_of(document, "StatusTasks")
    dlq, queue = queue_of(document, "asya-reviews-gateway-stream-dlq")
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
