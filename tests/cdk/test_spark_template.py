"""Spark actors in the synthesized template (the catalogue example: `clean` in DataFrame style with its
own capacity, `score` per payload with defaults): the EMR Serverless applications, the job roles, the
dispatchers and their queues, the collectors and their rules, the batches table and the dashboard, with
cdk-nag (AwsSolutions) and cfn-lint run on it; a mesh without Spark actors gets none of it."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template

from asya.names import DISTRIBUTION, VERSION_TAG
from asya_cdk.actor_config import SparkConfig
from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_local.deploy import IMAGE_COPY, without_image_copies
from asya_spark.settings import job_environment
from tests.support.templates import (
    actions_of,
    cfn_lint,
    managed_statements,
    queue_names,
    resources,
    role_statements,
    synthesize,
)

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "examples" / "catalogue" / "mesh.yaml"
REVIEWS = ROOT / "examples" / "reviews" / "mesh.yaml"
SPARK = ("clean", "score")
LAMBDA = ("ingest", "enrich", "summarise")
CREW = ("x-sink", "x-sump", "x-pause", "x-resume")
GATEWAY = ("gateway", "gateway-stream", "gateway-backstop")
OWN_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/asya-spark:1"
ASSETS_BUCKET = "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"
_VERSION_TAGS = [{"Key": VERSION_TAG, "Value": version(DISTRIBUTION)}]  # on every taggable resource the mesh makes
Synthesized = tuple[Template, dict[str, Any], Path]


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(load_mesh(CATALOGUE), tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="module")
def reviews(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(load_mesh(REVIEWS), tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The catalogue with every Spark setting of `score` changed from its default, and `clean` on its
    own image."""
    document = yaml.safe_load(CATALOGUE.read_text())
    document["actors"]["clean"]["spark"]["image_uri"] = OWN_IMAGE
    document["actors"]["score"]["tracing"] = True
    document["actors"]["score"].update(
        architecture="x86_64",
        function_timeout=120,
        spark={
            "release": "emr-7.9.0",
            "max_vcpu": 4,
            "max_memory_gb": 16,
            "max_disk_gb": 40,
            "idle_minutes": 3,
            "job_timeout": "90m",
            "reconcile_minutes": 10,
            "python": "/usr/local/bin/python3",
            "conf": {"spark.executor.cores": "2"},
        },
    )
    mesh = LoadedMesh(config=MeshConfig.model_validate(document), base=CATALOGUE.parent)
    return synthesize(mesh, tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="module")
def own_images(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The catalogue with every Spark actor on an image of its own."""
    document = yaml.safe_load(CATALOGUE.read_text())
    for actor in SPARK:
        document["actors"][actor].setdefault("spark", {})["image_uri"] = OWN_IMAGE
    mesh = LoadedMesh(config=MeshConfig.model_validate(document), base=CATALOGUE.parent)
    return synthesize(mesh, tmp_path_factory.mktemp("cdk.out"))


def _key(document: dict[str, Any], kind: str, prefix: str) -> str:
    resources: dict[str, dict[str, Any]] = document["Resources"]
    [key] = [k for k, r in resources.items() if r["Type"] == kind and k.startswith(prefix)]
    return key


def _arn(key: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [key, "Arn"]}


def _under(base: Any, suffix: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [base, suffix]]}


def _application(document: dict[str, Any], actor: str) -> str:
    return _key(document, "AWS::EMRServerless::Application", f"MeshSpark{actor}Application")


def _job_role(document: dict[str, Any], actor: str) -> str:
    return _key(document, "AWS::IAM::Role", f"MeshSpark{actor}JobRole")


def _bucket(document: dict[str, Any]) -> str:
    return _key(document, "AWS::S3::Bucket", "MeshResults")


def _batches(document: dict[str, Any]) -> str:
    return _key(document, "AWS::DynamoDB::Table", "MeshSparkBatches")


def _functions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The mesh's named functions (the image copy's singleton function has no name of its own)."""
    functions = resources(document, "AWS::Lambda::Function").values()
    return {f["FunctionName"]: f for f in functions if "FunctionName" in f}


def _variables(document: dict[str, Any], name: str) -> dict[str, Any]:
    variables: dict[str, Any] = _functions(document)[name]["Environment"]["Variables"]
    return variables


def _repository(document: dict[str, Any]) -> str:
    return _key(document, "AWS::ECR::Repository", "MeshSparkJobImagesRepository")


def _job_image(document: dict[str, Any], tag: str) -> dict[str, Any]:
    """The mesh's job repository's URI with `tag`, as CloudFormation spells it."""
    arn_part = {"Fn::Split": [":", _arn(_repository(document))]}
    return {
        "Fn::Join": [
            "",
            [
                {"Fn::Select": [4, arn_part]},
                ".dkr.ecr.",
                {"Fn::Select": [3, arn_part]},
                ".",
                {"Ref": "AWS::URLSuffix"},
                "/",
                {"Ref": _repository(document)},
                f":{tag}",
            ],
        ]
    }


def _image_copies(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in document["Resources"].items() if r["Type"] == IMAGE_COPY}


def _built(outdir: Path, release: str, architecture: str) -> str:
    """The tag of the job image built for a release and architecture: `<release>-<architecture>-<content>`,
    the content being the start of the image asset's hash (the asset manifest's key)."""
    assets = json.loads((outdir / "asya-catalogue.assets.json").read_text())
    platform = {"arm64": "linux/arm64", "x86_64": "linux/amd64"}[architecture]
    [content] = [
        key
        for key, image in assets["dockerImages"].items()
        if (image["source"]["platform"], image["source"]["dockerBuildArgs"]["RELEASE"]) == (platform, release)
    ]
    return f"{release}-{architecture}-{content[:16]}"


def _docker_images(outdir: Path) -> list[dict[str, Any]]:
    assets = json.loads((outdir / "asya-catalogue.assets.json").read_text())
    return [image["source"] for image in assets.get("dockerImages", {}).values()]


def _with(statements: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The statements granting any action of a service (`s3:`, `emr-serverless:`, ...)."""
    return [s for s in statements if any(a.startswith(prefix) for a in actions_of([s]))]


def _asset_keys(variables: dict[str, Any]) -> set[str]:
    """The S3 keys of the job's entry point, code and environment, as the dispatcher names them."""
    urls = [variables["ASYA_SPARK_ENTRY_POINT"]["Fn::Sub"]]
    urls += [p["Fn::Sub"] for p in variables["ASYA_SPARK_SUBMIT_PARAMETERS"]["Fn::Join"][1] if isinstance(p, dict)]
    prefix = f"s3://{ASSETS_BUCKET}/"
    assert all(url.startswith(prefix) for url in urls), urls
    return {url.removeprefix(prefix) for url in urls}


@pytest.mark.parametrize(
    ("actor", "capacity"),
    [
        ("clean", {"Cpu": "8 vCPU", "Memory": "32 GB", "Disk": "200 GB"}),
        ("score", {"Cpu": "16 vCPU", "Memory": "64 GB", "Disk": "200 GB"}),
    ],
)
def test_each_spark_actor_has_its_emr_serverless_application(
    catalogue: Synthesized, actor: str, capacity: dict[str, str]
) -> None:
    _, document, outdir = catalogue
    logs = _key(document, "AWS::Logs::LogGroup", f"MeshSpark{actor}JobLogs")
    assert document["Resources"][logs]["Properties"] == {
        "LogGroupName": f"/aws/emr-serverless/asya-catalogue-{actor}",
        "RetentionInDays": 30,
        "Tags": _VERSION_TAGS,
    }
    assert resources(document, "AWS::EMRServerless::Application")[_application(document, actor)] == {
        "Name": f"asya-catalogue-{actor}",
        "Type": "SPARK",
        "ReleaseLabel": "emr-7.12.0",
        "Architecture": "ARM64",
        "AutoStartConfiguration": {"Enabled": True},
        "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": 15},
        "MaximumCapacity": capacity,
        "MonitoringConfiguration": {"CloudWatchLoggingConfiguration": {"Enabled": True, "LogGroupName": {"Ref": logs}}},
        "ImageConfiguration": {"ImageUri": _job_image(document, _built(outdir, "emr-7.12.0", "arm64"))},
        "Tags": _VERSION_TAGS,
    }


def test_only_spark_actors_have_applications(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    names = {a["Name"] for a in resources(document, "AWS::EMRServerless::Application").values()}
    assert names == {"asya-catalogue-clean", "asya-catalogue-score"}
    expected = {f"asya-catalogue-{name}" for name in (*SPARK, *LAMBDA, *CREW, *GATEWAY)}
    expected |= {f"asya-catalogue-x-collect-{name}" for name in SPARK}
    expected.add("asya-catalogue-x-spark-guard")  # stops an application before it is updated or deleted
    assert set(_functions(document)) == expected
    for name in LAMBDA:
        variables = _variables(document, f"asya-catalogue-{name}")
        assert _functions(document)[f"asya-catalogue-{name}"]["Handler"] == "asya.actor.lambda_handler"
        assert not [key for key in variables if key.startswith("ASYA_SPARK_")]
        assert variables["ASYA_IDEMPOTENCY_TABLE"] == {"Ref": _key(document, "AWS::DynamoDB::Table", "MeshIdempotency")}


@pytest.mark.parametrize("actor", SPARK)
def test_the_job_role_is_assumed_by_emr_serverless_for_its_own_application_only(
    catalogue: Synthesized, actor: str
) -> None:
    _, document, _ = catalogue
    role = document["Resources"][_job_role(document, actor)]["Properties"]
    application = _arn(_application(document, actor))  # the application itself or one of its runs
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "emr-serverless.amazonaws.com"},
            "Condition": {
                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                "ArnLike": {"aws:SourceArn": [application, _under(application, "/*")]},
            },
        }
    ]
    assert "ManagedPolicyArns" not in role


def test_a_traced_spark_actor_s_job_may_write_its_hops_segments(tuned: Synthesized, catalogue: Synthesized) -> None:
    """EMR runs no X-Ray daemon: the job's hops send their segments with the API (`asya.xray`)."""
    assert "xray:PutTraceSegments" in actions_of(role_statements(tuned[1], "MeshSparkscoreJobRole"))
    assert "xray:PutTraceSegments" not in actions_of(role_statements(tuned[1], "MeshSparkcleanJobRole"))
    assert "xray:PutTraceSegments" not in actions_of(role_statements(catalogue[1], "MeshSparkscoreJobRole"))


@pytest.mark.parametrize(("actor", "other"), [("clean", "score"), ("score", "clean")])
def test_the_job_reads_its_code_and_input_and_writes_only_its_output(
    catalogue: Synthesized, actor: str, other: str
) -> None:
    _, document, _ = catalogue
    statements = role_statements(document, f"MeshSpark{actor}JobRole")
    bucket = _arn(_bucket(document))
    staging = f"/spark/catalogue/{actor}/"
    assert actions_of(statements) == {
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:ListBucket",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "logs:DescribeLogStreams",
        "logs:DescribeLogGroups",
    }
    reads = [s["Resource"] for s in statements if s["Action"] == "s3:GetObject"]
    assert len(reads) == 2
    assets, staged = reads
    # its staging prefix, and the two "folders" above it that EMRFS may probe; no other actor's keys
    assert staged == [
        _under(bucket, f"{staging}*"),
        _under(bucket, f"/spark/catalogue/{actor}"),
        _under(bucket, "/spark/catalogue"),
    ]
    asset_keys = set()
    for arn in assets:
        head, tail = arn["Fn::Join"][1][:-1], arn["Fn::Join"][1][-1]
        assert head == ["arn:", {"Ref": "AWS::Partition"}, ":s3:::", {"Fn::Sub": ASSETS_BUCKET}]
        asset_keys.add(tail.removeprefix("/"))
    variables = _variables(document, f"asya-catalogue-{actor}")
    assert asset_keys == _asset_keys(variables), "the job may read exactly the code its dispatcher submits"
    assert len(asset_keys) == 3
    [writes] = [s for s in statements if "s3:PutObject" in s["Action"]]
    assert (sorted(writes["Action"]), writes["Resource"]) == (
        ["s3:DeleteObject", "s3:PutObject"],
        [_under(bucket, f"{staging}*/output/*"), _under(bucket, f"{staging}*/output_$folder$")],
    )
    [listing] = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert listing["Resource"] == bucket
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"spark/catalogue/{actor}/*"]}}
    group = _arn(_key(document, "AWS::Logs::LogGroup", f"MeshSpark{actor}JobLogs"))
    logs = {json.dumps(sorted(_listed(st["Action"]))): st["Resource"] for st in _with(statements, "logs:")}
    assert logs == {
        '["logs:CreateLogStream", "logs:PutLogEvents"]': group,
        '["logs:DescribeLogStreams"]': group,
        '["logs:DescribeLogGroups"]': {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":logs:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    ":log-group:*",
                ],
            ]
        },
    }
    assert all(s["Effect"] == "Allow" for s in statements)
    assert not any("*" in a for a in actions_of(statements))
    text = json.dumps(statements)
    assert f"/spark/catalogue/{other}/" not in text
    assert "dynamodb" not in text
    assert "sqs" not in text


@pytest.mark.parametrize(("actor", "style"), [("clean", "dataframe"), ("score", "payload")])
def test_the_dispatcher_consumes_the_actors_queue_in_large_batches(
    catalogue: Synthesized, actor: str, style: str
) -> None:
    _, document, _ = catalogue
    function_key = _key(document, "AWS::Lambda::Function", f"MeshActor{actor}Function")
    function = document["Resources"][function_key]["Properties"]
    assert function["FunctionName"] == f"asya-catalogue-{actor}"
    assert function["Handler"] == "asya_spark.dispatch.lambda_handler"
    assert (function["Timeout"], function["MemorySize"], function["Architectures"]) == (300, 512, ["arm64"])
    queue_key = _key(document, "AWS::SQS::Queue", f"MeshActor{actor}Queue")
    queue = document["Resources"][queue_key]["Properties"]
    assert queue["QueueName"] == f"asya-catalogue-{actor}"
    assert queue["VisibilityTimeout"] == 1800
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == _arn(_key(document, "AWS::SQS::Queue", "MeshCrewxsump"))
    [mapping] = [
        m
        for m in resources(document, "AWS::Lambda::EventSourceMapping").values()
        if m.get("FunctionName") == {"Ref": function_key}
    ]
    assert mapping == {
        "BatchSize": 1000,
        "MaximumBatchingWindowInSeconds": 2,
        "EventSourceArn": _arn(queue_key),
        "FunctionName": {"Ref": function_key},
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "Tags": _VERSION_TAGS,
    }


@pytest.mark.parametrize(("actor", "style"), [("clean", "dataframe"), ("score", "payload")])
def test_the_dispatcher_and_collector_are_told_where_the_application_table_and_job_are(
    catalogue: Synthesized, actor: str, style: str
) -> None:
    _, document, _ = catalogue
    variables = _variables(document, f"asya-catalogue-{actor}")
    spark = {key: value for key, value in variables.items() if key.startswith("ASYA_SPARK_")}
    application = _application(document, actor)
    assert spark == {
        "ASYA_SPARK_STAGING_BUCKET": {"Ref": _bucket(document)},
        "ASYA_SPARK_BATCHES_TABLE": {"Ref": _batches(document)},
        "ASYA_SPARK_APPLICATION_ID": {"Fn::GetAtt": [application, "ApplicationId"]},
        "ASYA_SPARK_JOB_ROLE_ARN": _arn(_job_role(document, actor)),
        "ASYA_SPARK_ENTRY_POINT": variables["ASYA_SPARK_ENTRY_POINT"],
        "ASYA_SPARK_SUBMIT_PARAMETERS": variables["ASYA_SPARK_SUBMIT_PARAMETERS"],
        "ASYA_SPARK_JOB_TIMEOUT_MINUTES": "60",
        "ASYA_SPARK_STYLE": style,
    }
    assert variables["ASYA_SPARK_ENTRY_POINT"]["Fn::Sub"].endswith(".py")
    submit = variables["ASYA_SPARK_SUBMIT_PARAMETERS"]["Fn::Join"][1]
    assert submit[0] == "--py-files "
    assert submit[2] == " --conf spark.archives="
    assert submit[4].startswith("#asya_env --conf spark.emr-serverless.driverEnv.PYTHONPATH=./asya_env ")
    assert "--conf spark.executorEnv.PYSPARK_PYTHON=/usr/bin/python3.11" in submit[4]
    # the job's variables are forwarded from these at runtime (asya_spark.settings), never copied
    job_env = job_environment({key: value for key, value in variables.items() if isinstance(value, str)})
    expected = {
        "ASYA_NAMESPACE": "catalogue",
        "ASYA_ACTOR_NAME": actor,
        "ASYA_HANDLER": f"actors.{actor}",
        "ASYA_HANDLER_MODE": "payload",
        "ASYA_ACTOR_TIMEOUT_SECONDS": "60",
        "ASYA_SPARK_STYLE": style,
    }
    assert {key: value for key, value in job_env.items() if key != "ASYA_RESILIENCY"} == expected
    # the dispatcher restores large payloads before staging and the collector checks outputs in
    assert variables["ASYA_CLAIM_BUCKET"] == {"Ref": _bucket(document)}
    assert "ASYA_IDEMPOTENCY_TABLE" not in variables, "hop claims replace the idempotency table"
    assert variables["ASYA_TASKS_TABLE"] == {"Ref": _key(document, "AWS::DynamoDB::Table", "MeshStatusTasks")}
    assert _variables(document, f"asya-catalogue-x-collect-{actor}") == variables


def test_the_job_gets_the_actors_resiliency(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    score = job_environment(_variables(document, "asya-catalogue-score"))
    resiliency = json.loads(score["ASYA_RESILIENCY"])
    assert resiliency["rules"] == [{"errors": ["SparkJobError"], "policy": "job"}]
    assert resiliency["policies"]["job"]["max_attempts"] == 3
    clean = job_environment(_variables(document, "asya-catalogue-clean"))
    assert "ASYA_RESILIENCY" not in clean


@pytest.mark.parametrize(("actor", "other"), [("clean", "score"), ("score", "clean")])
def test_the_dispatcher_role_stages_records_and_starts_jobs_of_its_own_actor_only(
    catalogue: Synthesized, actor: str, other: str
) -> None:
    _, document, _ = catalogue
    statements = role_statements(document, f"MeshActor{actor}Role")
    application = _arn(_application(document, actor))
    [runs] = _with(statements, "emr-serverless:")
    assert runs["Action"] == ["emr-serverless:StartJobRun", "emr-serverless:TagResource"]
    assert runs["Resource"] == [application, _under(application, "/jobruns/*")]
    [passing] = _with(statements, "iam:")
    assert passing == {
        "Action": "iam:PassRole",
        "Effect": "Allow",
        "Resource": _arn(_job_role(document, actor)),
        "Condition": {"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}},
    }
    [ledger] = [s for s in statements if s["Resource"] == _arn(_batches(document))]
    assert set(ledger["Action"]) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
    }
    assert ledger["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"catalogue#{actor}#*"]}}
    staging, claims = _with(statements, "s3:")
    assert staging["Action"] == "s3:PutObject"
    assert staging["Resource"] == _under(_arn(_bucket(document)), f"/spark/catalogue/{actor}/*")
    assert (claims["Action"], claims["Resource"]) == (
        "s3:GetObject",
        _under(_arn(_bucket(document)), "/claims/catalogue/*"),
    ), "large payloads are read to be staged whole"
    idempotency = _key(document, "AWS::DynamoDB::Table", "MeshIdempotency")
    text = json.dumps(statements)
    for foreign in (idempotency, _application(document, other), _job_role(document, other), f"#{other}#"):
        assert foreign not in text
    assert not any(a.endswith(":*") or a == "*" for a in actions_of(statements))


@pytest.mark.parametrize(("actor", "other"), [("clean", "score"), ("score", "clean")])
def test_the_collector_settles_its_own_actors_batches(catalogue: Synthesized, actor: str, other: str) -> None:
    _, document, _ = catalogue
    collector = _functions(document)[f"asya-catalogue-x-collect-{actor}"]
    assert collector["Handler"] == "asya_spark.collect.lambda_handler"
    assert (collector["Timeout"], collector["MemorySize"]) == (600, 1024)
    assert collector["Role"]["Fn::GetAtt"][0].startswith(f"MeshSpark{actor}CollectorRole")
    statements = role_statements(document, f"MeshSpark{actor}CollectorRole")
    application = _arn(_application(document, actor))
    [runs] = _with(statements, "emr-serverless:")
    assert set(runs["Action"]) == {
        "emr-serverless:GetJobRun",
        "emr-serverless:CancelJobRun",
        "emr-serverless:StartJobRun",
        "emr-serverless:TagResource",
    }
    assert runs["Resource"] == [application, _under(application, "/jobruns/*")]
    [passing] = _with(statements, "iam:")
    assert (passing["Resource"], passing["Condition"]) == (
        _arn(_job_role(document, actor)),
        {"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}},
    )
    bucket = _arn(_bucket(document))
    s3 = {(s["Action"], json.dumps(s["Resource"])) for s in _with(statements, "s3:")}
    assert s3 == {
        ("s3:GetObject", json.dumps(_under(bucket, f"/spark/catalogue/{actor}/*"))),
        ("s3:ListBucket", json.dumps(bucket)),
        ("s3:PutObject", json.dumps(_under(bucket, "/claims/catalogue/*"))),
    }, "the collector reads the staged input and the job's output, and writes only the job's large outputs"
    [listing] = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"spark/catalogue/{actor}/*"]}}
    batches = _arn(_batches(document))
    [ledger] = [s for s in statements if isinstance(s["Resource"], list) and batches in s["Resource"]]
    assert set(ledger["Action"]) == {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"}
    assert ledger["Resource"] == [batches, _under(batches, "/index/open")]
    assert ledger["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"catalogue#{actor}#*"]}}
    assert not [s for s in statements if "sqs:SendMessage" in s["Action"]], "queues come in the mesh's managed policy"
    [send] = managed_statements(document, f"MeshSpark{actor}CollectorRole")
    assert "asya-catalogue-x-sink" in queue_names(send)
    assert "asya-catalogue-x-resume" not in queue_names(send)
    assert not [name for name in queue_names(send) if "*" in name]
    text = json.dumps(statements)
    for foreign in (_application(document, other), _job_role(document, other), f"/spark/catalogue/{other}/"):
        assert foreign not in text
    assert not any(a.endswith(":*") or a == "*" for a in actions_of(statements))


@pytest.mark.parametrize("actor", SPARK)
def test_job_state_changes_and_a_schedule_invoke_the_collector(catalogue: Synthesized, actor: str) -> None:
    _, document, _ = catalogue
    collector = _arn(_key(document, "AWS::Lambda::Function", f"MeshSpark{actor}CollectorFunction"))
    rules = {k: r for k, r in resources(document, "AWS::Events::Rule").items() if r["Targets"][0]["Arn"] == collector}
    assert len(rules) == 2
    [state] = [r for r in rules.values() if "EventPattern" in r]
    assert state["EventPattern"] == {
        "source": ["aws.emr-serverless"],
        "detail-type": ["EMR Serverless Job Run State Change"],
        "detail": {
            "applicationId": [{"Fn::GetAtt": [_application(document, actor), "ApplicationId"]}],
            "state": ["CANCELLED", "FAILED", "SUCCESS"],
        },
    }
    [schedule] = [r for r in rules.values() if "ScheduleExpression" in r]
    assert schedule["ScheduleExpression"] == "rate(5 minutes)"
    for rule in rules.values():
        assert rule["State"] == "ENABLED"
        assert [t["RetryPolicy"] for t in rule["Targets"]] == [{"MaximumRetryAttempts": 4}]
    permitted = {
        p["SourceArn"]["Fn::GetAtt"][0]
        for p in resources(document, "AWS::Lambda::Permission").values()
        if p["FunctionName"] == collector and p["Principal"] == "events.amazonaws.com"
    }
    assert permitted == set(rules), "each rule may invoke the collector"


def test_the_batches_table_keeps_batches_and_claims_with_an_open_index(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    key = _batches(document)
    table = document["Resources"][key]
    assert table["DeletionPolicy"] == "Delete"
    properties = table["Properties"]
    assert properties["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["GlobalSecondaryIndexes"] == [
        {
            "IndexName": "open",
            "KeySchema": [
                {"AttributeName": "open_actor", "KeyType": "HASH"},
                {"AttributeName": "staged_at", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ]
    assert {a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]} == {
        "pk": "S",
        "open_actor": "S",
        "staged_at": "N",
    }
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert document["Outputs"]["SparkBatchesTable"] == {"Value": {"Ref": key}}
    assert len([k for k in resources(document, "AWS::DynamoDB::Table") if k.startswith("MeshSparkBatches")]) == 1


def test_the_dashboard_shows_spark_batches_durations_and_outcomes(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    [dashboard] = resources(document, "AWS::CloudWatch::Dashboard").values()
    text = "".join(part for part in dashboard["DashboardBody"]["Fn::Join"][1] if isinstance(part, str))
    for actor in SPARK:
        for metric in ("SparkBatches", "SparkBatchSize", "SparkJobDuration"):
            assert f'"Asya","{metric}","actor","{actor}","mesh","catalogue"' in text, (metric, actor)
    assert 'MetricName=\\"SparkJobs\\" mesh=\\"catalogue\\"' in text
    for actor in LAMBDA:
        assert f'"Asya","SparkBatches","actor","{actor}"' not in text


def test_a_mesh_without_spark_actors_has_no_spark_resources(reviews: Synthesized) -> None:
    _, document, _ = reviews
    assert not resources(document, "AWS::EMRServerless::Application")
    assert not [k for k in resources(document, "AWS::DynamoDB::Table") if k.startswith("MeshSparkBatches")]
    assert "SparkBatchesTable" not in document["Outputs"]
    assert not [f for f in _functions(document) if "x-collect" in f]
    text = json.dumps(document)
    for needle in ("emr-serverless", "asya_spark", "ASYA_SPARK_", "SparkBatches", "SparkJobs"):
        assert needle not in text, needle


def test_every_spark_setting_reaches_the_template(tuned: Synthesized) -> None:
    _, document, outdir = tuned
    [copy] = _image_copies(document).values()  # score's own, on x86_64 (clean names an image of its own)
    assert copy["Properties"]["ImageArch"] == "amd64"
    application = resources(document, "AWS::EMRServerless::Application")[_application(document, "score")]
    assert (application["ReleaseLabel"], application["Architecture"]) == ("emr-7.9.0", "X86_64")
    assert application["AutoStopConfiguration"] == {"Enabled": True, "IdleTimeoutMinutes": 3}
    assert application["MaximumCapacity"] == {"Cpu": "4 vCPU", "Memory": "16 GB", "Disk": "40 GB"}
    assert application["ImageConfiguration"] == {
        "ImageUri": _job_image(document, _built(outdir, "emr-7.9.0", "x86_64"))
    }
    clean = resources(document, "AWS::EMRServerless::Application")[_application(document, "clean")]
    assert clean["ImageConfiguration"] == {"ImageUri": OWN_IMAGE}
    dispatcher = _functions(document)["asya-catalogue-score"]
    assert (dispatcher["Timeout"], dispatcher["Architectures"]) == (120, ["x86_64"])
    assert (
        resources(document, "AWS::SQS::Queue")[_key(document, "AWS::SQS::Queue", "MeshActorscoreQueue")][
            "VisibilityTimeout"
        ]
        == 720
    )
    variables = dispatcher["Environment"]["Variables"]
    assert variables["ASYA_SPARK_JOB_TIMEOUT_MINUTES"] == "90"
    submit = variables["ASYA_SPARK_SUBMIT_PARAMETERS"]["Fn::Join"][1][-1]
    assert "--conf spark.executorEnv.PYSPARK_PYTHON=/usr/local/bin/python3 " in submit
    assert submit.endswith(" --conf spark.executor.cores=2")
    collector = _arn(_key(document, "AWS::Lambda::Function", "MeshSparkscoreCollectorFunction"))
    [schedule] = [
        r
        for r in resources(document, "AWS::Events::Rule").values()
        if r["Targets"][0]["Arn"] == collector and "ScheduleExpression" in r
    ]
    assert schedule["ScheduleExpression"] == "rate(10 minutes)"
    layers = {f["Architectures"][0]: f["Layers"] for f in _functions(document).values()}
    assert layers["x86_64"] != layers["arm64"], "an x86_64 actor gets a layer built for x86_64"


@pytest.mark.parametrize("variant", ["catalogue", "tuned"])
def test_cfn_lint_passes(variant: str, request: pytest.FixtureRequest) -> None:
    _, _, outdir = request.getfixturevalue(variant)
    result = cfn_lint(outdir / "asya-catalogue.template.json")
    assert result.returncode == 0, result.stdout + result.stderr


def _listed(action: str | list[str]) -> list[str]:
    return [action] if isinstance(action, str) else action


def test_the_mesh_builds_one_job_image_per_release_and_architecture(catalogue: Synthesized) -> None:
    _, document, outdir = catalogue
    [source] = _docker_images(outdir)
    assert (source["platform"], source["dockerBuildArgs"]) == ("linux/arm64", {"RELEASE": "emr-7.12.0"})
    assert (outdir / source["directory"] / "Dockerfile").read_text() == (
        ROOT / "spark_emr/asya_spark_job/image/Dockerfile"
    ).read_text()
    [(copy_id, copy)] = _image_copies(document).items()
    tag = _built(outdir, "emr-7.12.0", "arm64")
    assert copy["Properties"]["DestImage"]["Fn::Join"][1][-1] == f":{tag}"
    # from an image index (Docker's containerd store pushes one) the copy takes this architecture, not amd64
    assert copy["Properties"]["ImageArch"] == "arm64"
    assert resources(document, "AWS::ECR::Repository")[_repository(document)]["RepositoryName"] == (
        "asya-catalogue-spark-job"
    )
    for actor in SPARK:
        application = document["Resources"][_application(document, actor)]
        assert application["Properties"]["ImageConfiguration"] == {"ImageUri": _job_image(document, tag)}
        assert copy_id in application["DependsOn"], "EMR Serverless checks the image when the application is made"


def test_a_rebuilt_job_image_is_a_new_uri_and_old_ones_are_expired(catalogue: Synthesized) -> None:
    """EMR Serverless resolves the image to a digest when an application starts: an image pushed again
    under the same tag would be used only once it happened to restart. Tagged by content, a changed
    image changes the application's settings, so its guard stops it for the update."""
    _, document, outdir = catalogue
    [image] = json.loads((outdir / "asya-catalogue.assets.json").read_text())["dockerImages"]
    assert _built(outdir, "emr-7.12.0", "arm64") == f"emr-7.12.0-arm64-{image[:16]}"
    repository = resources(document, "AWS::ECR::Repository")[_repository(document)]
    [rule] = json.loads(repository["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert rule["selection"] == {
        "tagStatus": "tagged",
        "tagPrefixList": ["emr-7.12.0-arm64-"],
        "countType": "imageCountMoreThan",
        "countNumber": 3,
    }


def test_emr_serverless_may_pull_the_job_image_for_this_accounts_applications_only(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    policy = resources(document, "AWS::ECR::Repository")[_repository(document)]["RepositoryPolicyText"]
    [statement] = policy["Statement"]
    assert statement["Principal"] == {"Service": "emr-serverless.amazonaws.com"}
    assert sorted(_listed(statement["Action"])) == [
        "ecr:BatchGetImage",
        "ecr:DescribeImages",
        "ecr:GetDownloadUrlForLayer",
    ]
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {
            "aws:SourceArn": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":emr-serverless:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        ":/applications/*",
                    ],
                ]
            }
        },
    }


def test_the_copy_pushes_only_to_the_job_repository(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    statements = role_statements(document, "MeshSparkJobImagesCopyRole")
    pushes = [s for s in statements if "ecr:PutImage" in _listed(s["Action"])]
    assert [s["Resource"] for s in pushes] == [_arn(_repository(document))]
    assert all(s["Resource"] == "*" for s in statements if "ecr:GetAuthorizationToken" in _listed(s["Action"]))
    assert not [s for s in statements if s["Resource"] == "*" and _listed(s["Action"]) != ["ecr:GetAuthorizationToken"]]


def test_the_job_runs_the_python_the_image_installs(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    python = SparkConfig().python
    assert (
        f"RUN dnf install -y python3.11 && dnf clean all && {python} --version"
        in (ROOT / "spark_emr/asya_spark_job/image/Dockerfile").read_text()
    )
    for actor in SPARK:
        submit = _variables(document, f"asya-catalogue-{actor}")["ASYA_SPARK_SUBMIT_PARAMETERS"]["Fn::Join"][1][-1]
        assert f"--conf spark.executorEnv.PYSPARK_PYTHON={python} " in submit


def test_actors_on_their_own_images_get_no_built_image(own_images: Synthesized) -> None:
    _, document, outdir = own_images
    assert _docker_images(outdir) == []
    assert not _image_copies(document)
    assert not resources(document, "AWS::ECR::Repository")
    for actor in SPARK:
        application = document["Resources"][_application(document, actor)]
        assert application["Properties"]["ImageConfiguration"] == {"ImageUri": OWN_IMAGE}


def test_the_local_stack_leaves_out_the_image_copy_and_its_function(catalogue: Synthesized) -> None:
    _, document, _ = catalogue
    template, unused_code = without_image_copies(document)
    assert not _image_copies(template)
    [copier] = [k for k in document["Resources"] if k.startswith("CustomCDKECRDeployment")]
    assert copier not in template["Resources"]
    [framework] = [
        k
        for k, r in document["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and "FunctionName" not in r["Properties"] and k != copier
    ]
    assert framework not in template["Resources"], "the guards' provider framework goes with the guards"
    assert not [r for r in template["Resources"].values() if r["Type"].startswith("Custom::AsyaApplication")]
    assert unused_code == {document["Resources"][f]["Properties"]["Code"]["S3Key"] for f in (copier, framework)}
    assert all("DependsOn" not in template["Resources"][_application(document, a)] for a in SPARK)


def test_each_application_is_stopped_by_its_guard_before_an_update(catalogue: Synthesized, tuned: Synthesized) -> None:
    """EMR Serverless refuses to update a STARTED application: its guard, which it depends on and whose
    properties are its settings, is updated first whenever they change (`asya_cdk.spark_updates`)."""
    settings: dict[str, list[str]] = {}
    for variant in (catalogue, tuned):
        _, document, _ = variant
        guards = {k: r for k, r in document["Resources"].items() if r["Type"] == "Custom::AsyaApplicationGuard"}
        for actor in SPARK:
            application = document["Resources"][_application(document, actor)]
            [(guard_id, guard)] = [
                (k, g) for k, g in guards.items() if g["Properties"]["ApplicationName"] == f"asya-catalogue-{actor}"
            ]
            assert guard_id in application["DependsOn"]
            settings.setdefault(actor, []).append(json.dumps(guard["Properties"]["Settings"], sort_keys=True))
    assert settings["score"][0] != settings["score"][1], "score's spark settings changed: its guard is updated"
    assert settings["clean"][0] != settings["clean"][1], "clean's image changed: its guard is updated too"


def test_each_application_is_stopped_by_its_after_resource_before_it_is_deleted(catalogue: Synthesized) -> None:
    """EMR Serverless refuses to delete a STARTED application, and CloudFormation deletes a resource
    before what it depends on: the after resource names the application's id (so depends on it), and
    is deleted first. It carries the guard's settings, so it is updated after the application (and
    lifts the guard's hold on job starts), and where the hold is kept."""
    _, document, _ = catalogue
    by_type = {
        kind: {r["Properties"]["Actor"]: r for r in document["Resources"].values() if r["Type"] == kind}
        for kind in ("Custom::AsyaApplicationGuard", "Custom::AsyaApplicationAfter")
    }
    guards, afters = by_type.values()
    for actor in SPARK:
        guard, after = guards[actor]["Properties"], afters[actor]["Properties"]
        assert after["ApplicationId"] == {"Fn::GetAtt": [_application(document, actor), "ApplicationId"]}
        assert after["Settings"] == guard["Settings"]
        hold = {"BatchesTable": {"Ref": _batches(document)}, "Namespace": "catalogue", "Actor": actor}
        assert {k: guard[k] for k in hold} == {k: after[k] for k in hold} == hold
        assert after["ServiceToken"] == guard["ServiceToken"]
    statements = role_statements(document, "MeshApplicationGuardsStopper")
    emr = actions_of(_with(statements, "emr-serverless:"))
    assert {"emr-serverless:ListJobRuns", "emr-serverless:CancelJobRun", "emr-serverless:StopApplication"} <= emr
    [table] = _with(statements, "dynamodb:")
    assert sorted(actions_of([table])) == ["dynamodb:DeleteItem", "dynamodb:PutItem"]
    assert table["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["catalogue#*#hold"]}}
