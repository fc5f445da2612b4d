"""Container actors in the synthesized template (tests/cdk/meshes/containers.yaml: `embed` on Fargate,
`transcribe` on a GPU instance, beside the Lambda actor `prepare`): the ECS services and their task
definitions, the GPU capacity, scaling from zero on the backlog, the task roles' grants against a
Lambda actor of the same config, the queues; cdk-nag (which raises on anything not acknowledged) and
cfn-lint clean, nested stacks included; and what the local stack leaves out of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from cdk_nag import AwsSolutionsChecks

from asya.names import CONTAINER_SERVICES_OUTPUT
from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import load_mesh
from asya_cdk.stack import MeshStack
from asya_local.deploy import local_template
from tests.support.templates import cfn_lint, resources, role_statements, synthesize

MESHES = Path(__file__).parent / "meshes"
CONTAINERS = MESHES / "containers.yaml"
Document = dict[str, Any]

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def boxed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Document, Path]:
    _, document, outdir = synthesize(load_mesh(CONTAINERS), tmp_path_factory.mktemp("cdk.out"))
    return document, outdir


@pytest.fixture(scope="module")
def as_lambda(tmp_path_factory: pytest.TempPathFactory) -> Document:
    """The same mesh with `embed` a Lambda actor of the same config: what its role is granted."""
    document = yaml.safe_load(CONTAINERS.read_text())
    embed = document["actors"]["embed"]
    for container_only in ("runtime", "container", "timeout"):
        embed.pop(container_only)
    base = tmp_path_factory.mktemp("mesh")
    (base / "mesh.yaml").write_text(yaml.safe_dump(document))
    (base / "actors.py").write_text((MESHES / "actors.py").read_text())
    return synthesize(load_mesh(base / "mesh.yaml"), tmp_path_factory.mktemp("cdk.out"))[1]


def _one(document: Document, kind: str, prefix: str) -> tuple[str, dict[str, Any]]:
    found = [(k, r["Properties"]) for k, r in document["Resources"].items() if r["Type"] == kind and prefix in k]
    assert len(found) == 1, (kind, prefix, [k for k, _ in found])
    return found[0]


def _environment(task: dict[str, Any]) -> dict[str, Any]:
    (container,) = task["ContainerDefinitions"]
    return {variable["Name"]: variable["Value"] for variable in container["Environment"]}


def test_a_fargate_actor_is_a_service_in_the_mesh_cluster_at_zero(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    cluster_id, cluster = _one(document, "AWS::ECS::Cluster", "MeshContainers")
    assert cluster == {
        "ClusterName": "asya-boxed-containers",
        "ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}],
        "Tags": cluster["Tags"],
    }
    task_id, task = _one(document, "AWS::ECS::TaskDefinition", "Containerembed")
    _, service = _one(document, "AWS::ECS::Service", "Containerembed")
    assert service["ServiceName"] == "asya-boxed-embed"
    assert (service["Cluster"], service["TaskDefinition"]) == ({"Ref": cluster_id}, {"Ref": task_id})
    assert (service["LaunchType"], service["DesiredCount"]) == ("FARGATE", 0)
    assert service["NetworkConfiguration"]["AwsvpcConfiguration"] == {
        "AssignPublicIp": "DISABLED",
        "SecurityGroups": ["sg-0123456789abcdef0"],
        "Subnets": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    }
    assert (task["Family"], task["Cpu"], task["Memory"], task["RequiresCompatibilities"]) == (
        "asya-boxed-embed",
        "2048",
        "8192",
        ["FARGATE"],
    )
    assert task["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    assert task["EphemeralStorage"] == {"SizeInGiB": 30}
    (container,) = task["ContainerDefinitions"]
    assert (container["EntryPoint"], container["WorkingDirectory"]) == (["python3", "-m", "asya.consumer"], "/var/task")
    assert container["StopTimeout"] == 90
    assert "ResourceRequirements" not in container


def test_the_consumer_gets_the_sidecars_variables_and_its_own(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    _, task = _one(document, "AWS::ECS::TaskDefinition", "Containerembed")
    queue_id, _ = _one(document, "AWS::SQS::Queue", "ContainerembedQueue")
    variables = _environment(task)
    assert variables["ASYA_QUEUE_URL"] == {"Ref": queue_id}
    assert variables["ASYA_CONSUMER_CONCURRENCY"] == "4"
    assert variables["ASYA_HOP_TIME_LIMIT_SECONDS"] == "3610", "a batch of 1 gets a Lambda function's timeout"
    assert variables["ASYA_STOP_GRACE_SECONDS"] == "90"
    assert variables["PYTHONUNBUFFERED"] == "1", "each line reaches the awslogs pipe when it is written"
    assert variables["POWERTOOLS_TRACE_DISABLED"] == "true", "the Lambda base image's LAMBDA_TASK_ROOT misleads it"
    assert variables["ASYA_CONSUMER_BATCH_SIZE"] == "1", (
        "one at a time unless the file sets batch_size: not Lambda's 10"
    )
    for sidecar in ("ASYA_ACTOR_NAME", "ASYA_HANDLER", "ASYA_TASKS_TABLE", "ASYA_STATE_TABLE", "ASYA_SECRETS"):
        assert sidecar in variables, sidecar
    (container,) = task["ContainerDefinitions"]
    logs_id, logs = _one(document, "AWS::Logs::LogGroup", "ContainerembedLogs")
    assert (logs["LogGroupName"], logs["RetentionInDays"]) == ("/aws/ecs/asya-boxed-embed", 30)
    assert container["LogConfiguration"]["Options"]["awslogs-group"] == {"Ref": logs_id}


def test_the_queue_is_an_actors_queue_hidden_for_heartbeats(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    _, queue = _one(document, "AWS::SQS::Queue", "ContainerembedQueue")
    sump_id, _ = _one(document, "AWS::SQS::Queue", "CrewxsumpQueue")
    assert queue["QueueName"] == "asya-boxed-embed"
    assert queue["VisibilityTimeout"] == 120, "container.visibility, extended by the consumer's heartbeats"
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [sump_id, "Arn"]}, "maxReceiveCount": 5}
    assert queue["SqsManagedSseEnabled"] is True
    assert not [
        k for k, r in document["Resources"].items() if r["Type"] == "AWS::Lambda::EventSourceMapping" and "embed" in k
    ]


def test_a_gpu_actor_runs_on_its_own_instances_from_zero(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    _, task = _one(document, "AWS::ECS::TaskDefinition", "Containertranscribe")
    (container,) = task["ContainerDefinitions"]
    assert container["ResourceRequirements"] == [{"Type": "GPU", "Value": "1"}]
    assert (container["Cpu"], container["Memory"], task["RequiresCompatibilities"]) == (4096, 15000, ["EC2"])
    cluster_id, cluster = _one(document, "AWS::ECS::Cluster", "Containertranscribe")
    assert cluster["ClusterName"] == "asya-boxed-transcribe"
    assert cluster["ClusterSettings"] == [{"Name": "containerInsights", "Value": "enabled"}]
    group_id, group = _one(document, "AWS::AutoScaling::AutoScalingGroup", "Containertranscribe")
    assert (group["MinSize"], group["MaxSize"], group["NewInstancesProtectedFromScaleIn"]) == ("0", "2", True)
    _, template = _one(document, "AWS::EC2::LaunchTemplate", "Containertranscribe")
    data = template["LaunchTemplateData"]
    assert data["InstanceType"] == "g5.2xlarge"
    image_parameter = data["ImageId"]["Ref"]
    assert document["Parameters"][image_parameter] == {
        "Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
        "Default": "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id",
    }, "ECS's GPU-optimized Amazon Linux 2023 AMI, resolved at deploy (Amazon Linux 2's support ended 2026-06-30)"
    assert data["MetadataOptions"] == {"HttpTokens": "required"}
    assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True
    provider_id, provider = _one(document, "AWS::ECS::CapacityProvider", "Containertranscribe")
    scaling = provider["AutoScalingGroupProvider"]
    assert scaling["AutoScalingGroupArn"] == {"Ref": group_id}
    assert scaling["ManagedScaling"]["Status"] == "ENABLED"
    assert (scaling["ManagedTerminationProtection"], scaling["ManagedDraining"]) == ("ENABLED", "ENABLED")
    _, associations = _one(document, "AWS::ECS::ClusterCapacityProviderAssociations", "Containertranscribe")
    assert (associations["Cluster"], associations["CapacityProviders"]) == ({"Ref": cluster_id}, [{"Ref": provider_id}])
    _, service = _one(document, "AWS::ECS::Service", "Containertranscribe")
    assert service["CapacityProviderStrategy"] == [{"CapacityProvider": {"Ref": provider_id}, "Weight": 1}]
    assert (service["Cluster"], service["DesiredCount"], "LaunchType" in service) == ({"Ref": cluster_id}, 0, False)


def test_tasks_follow_the_backlog_and_go_to_zero_after_the_cool_down(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    target_id, target = _one(document, "AWS::ApplicationAutoScaling::ScalableTarget", "Containerembed")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 6)
    assert target["ScalableDimension"] == "ecs:service:DesiredCount"
    assert target["RoleARN"]["Fn::Join"][1][-1].endswith("AWSServiceRoleForApplicationAutoScaling_ECSService")
    out_id, out = _one(document, "AWS::ApplicationAutoScaling::ScalingPolicy", "ContainerembedScaleOut")
    steps = out["StepScalingPolicyConfiguration"]
    assert (steps["AdjustmentType"], out["ScalingTargetId"]) == ("ExactCapacity", {"Ref": target_id})
    assert [
        (s.get("MetricIntervalLowerBound"), s.get("MetricIntervalUpperBound"), s["ScalingAdjustment"])
        for s in steps["StepAdjustments"]
    ] == [
        (0, 1, 1),
        (1, 2, 2),
        (2, 3, 3),
        (3, 4, 4),
        (4, 5, 5),
        (5, None, 6),
    ]
    in_id, scale_in = _one(document, "AWS::ApplicationAutoScaling::ScalingPolicy", "ContainerembedScaleIn")
    idle = scale_in["StepScalingPolicyConfiguration"]
    assert (idle["Cooldown"], idle["StepAdjustments"]) == (
        300,
        [{"MetricIntervalUpperBound": 0, "ScalingAdjustment": 0}],
    )
    _, backlog = _one(document, "AWS::CloudWatch::Alarm", "ContainerembedBacklog")
    _, empty = _one(document, "AWS::CloudWatch::Alarm", "ContainerembedIdle")
    assert backlog["AlarmActions"] == [{"Ref": out_id}]
    assert empty["AlarmActions"] == [{"Ref": in_id}]
    assert (backlog["ComparisonOperator"], backlog["Threshold"]) == ("GreaterThanThreshold", 0)
    assert (empty["ComparisonOperator"], empty["EvaluationPeriods"]) == ("LessThanOrEqualToThreshold", 5)
    # x-backlog's data point each minute, not SQS's metrics, which stop after six idle hours
    assert (backlog["TreatMissingData"], empty["TreatMissingData"]) == ("notBreaching", "ignore"), (
        "x-backlog down: hold"
    )
    for alarm in (backlog, empty):
        expression, metric = alarm["Metrics"]
        assert expression["Expression"] == "backlog / 5", "the backlog per task, messages_per_task 5"
        assert metric["Id"] == "backlog"
        assert metric["MetricStat"]["Stat"] == "Maximum"
        assert metric["MetricStat"]["Period"] == 60
        assert metric["MetricStat"]["Metric"] == {
            "Namespace": "Asya",
            "MetricName": "Backlog",
            "Dimensions": [{"Name": "actor", "Value": "embed"}, {"Name": "mesh", "Value": "boxed"}],
        }


def test_x_backlog_reads_exactly_the_container_actors_queues_each_minute(boxed: tuple[Document, Path]) -> None:
    """The metric the alarms above read: one function and one rule, every minute, for both container
    actors (not `prepare`), which may read their two queues and put data in the `Asya` namespace only."""
    document, _ = boxed
    function_id, function = _one(document, "AWS::Lambda::Function", "MeshBacklogPublisher")
    assert (function["FunctionName"], function["Handler"]) == (
        "asya-boxed-x-backlog",
        "asya_crew.backlog.lambda_handler",
    )
    [rule] = [r for r in resources(document, "AWS::Events::Rule").values() if r["Name"] == "asya-boxed-x-backlog"]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert json.loads(target["Input"]) == {"mesh": "boxed", "actors": ["embed", "transcribe"]}
    statements = [s for s in role_statements(document, "MeshBacklogPublisherRole") if "logs:" not in json.dumps(s)]
    reads, puts = statements
    assert reads["Action"] == ["sqs:GetQueueUrl", "sqs:GetQueueAttributes"]
    assert [r["Fn::Join"][1][-1] for r in reads["Resource"]] == [":asya-boxed-embed", ":asya-boxed-transcribe"]
    assert (puts["Action"], puts["Resource"]) == ("cloudwatch:PutMetricData", "*")
    assert puts["Condition"] == {"StringEquals": {"cloudwatch:namespace": "Asya"}}
    [logs] = [g for g in resources(document, "AWS::Logs::LogGroup").values() if "x-backlog" in g["LogGroupName"]]
    assert (logs["LogGroupName"], logs["RetentionInDays"]) == ("/aws/lambda/asya-boxed-x-backlog", 30)
    assert function["LoggingConfig"]["LogGroup"] == {"Ref": _one(document, "AWS::Logs::LogGroup", "MeshBacklog")[0]}
    # a failing x-backlog holds every service's count: the mesh's function-errors alarm says so
    [errors] = [
        a for a in resources(document, "AWS::CloudWatch::Alarm").values() if "x-backlog" in a["AlarmDescription"]
    ]
    assert {"Ref": function_id} in [
        m["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for m in errors["Metrics"] if "MetricStat" in m
    ]


def _role_id(document: Document, prefix: str) -> str:
    roles: list[str] = [
        k for k, r in document["Resources"].items() if r["Type"] == "AWS::IAM::Role" and k.startswith(prefix)
    ]
    (role,) = roles
    return role


def _grants(document: Document, role: str, own: set[str]) -> list[str]:
    """The role's statements, those on its own queue and log group left out, as sorted JSON."""
    statements = [
        s
        for p in resources(document, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Roles"]
        for s in p["PolicyDocument"]["Statement"]
    ]
    return sorted(
        json.dumps(s, sort_keys=True) for s in statements if not own & set(json.dumps(s["Resource"]).split('"'))
    )


def test_the_task_role_has_a_lambda_actors_grants_and_consumes_its_queue(
    boxed: tuple[Document, Path], as_lambda: Document
) -> None:
    document, _ = boxed
    role = _role_id(document, "MeshContainerembedRole")
    trust = document["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "ecs-tasks.amazonaws.com"}]
    assert set(trust[0]["Condition"]) == {"StringEquals", "ArnLike"}, "this account's and region's tasks only"
    queue, _ = _one(document, "AWS::SQS::Queue", "ContainerembedQueue")
    consuming = [s for s in _grants(document, role, set()) if queue in s]
    assert [json.loads(s)["Action"] for s in consuming] == [
        [
            "sqs:ReceiveMessage",
            "sqs:ChangeMessageVisibility",
            "sqs:GetQueueUrl",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        ]
    ]
    protecting = [json.loads(s) for s in _grants(document, role, set()) if "ecs:" in s]
    assert protecting == [
        {
            "Action": "ecs:UpdateTaskProtection",  # the consumer's scale-in protection, through the ECS agent
            "Effect": "Allow",
            "Resource": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":ecs:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        ":task/asya-boxed-containers/*",
                    ],
                ]
            },
        }
    ]
    lambda_role = _role_id(as_lambda, "MeshActorembedRole")
    lambda_own = {k for k in as_lambda["Resources"] if k.startswith(("MeshActorembedQueue", "MeshActorembedLogs"))}
    own = [s for s in _grants(document, role, {queue}) if "ecs:UpdateTaskProtection" not in s]
    assert own == _grants(as_lambda, lambda_role, lambda_own)
    managed = document["Resources"][role]["Properties"]["ManagedPolicyArns"]
    lambda_managed = as_lambda["Resources"][lambda_role]["Properties"]["ManagedPolicyArns"]
    in_vpc = [m for m in lambda_managed if "AWSLambdaVPCAccessExecutionRole" in json.dumps(m)]
    assert len(in_vpc) == 1, "Lambda's network interfaces; ECS makes a task's itself"
    assert managed == [m for m in lambda_managed if m not in in_vpc], "it sends to the same queues"


def test_a_traced_container_actors_task_role_may_send_its_hops_segments(boxed: tuple[Document, Path]) -> None:
    """A task runs no X-Ray daemon: the consumer sends its hops' segments with `xray:PutTraceSegments`."""
    document, _ = boxed
    xray = '"Action": "xray:PutTraceSegments", "Effect": "Allow", "Resource": "*"'
    traced = _grants(document, _role_id(document, "MeshContainertranscribeRole"), set())
    assert [s for s in traced if "xray:" in s] == ["{" + xray + "}"]
    untraced = _grants(document, _role_id(document, "MeshContainerembedRole"), set())
    assert not [s for s in untraced if "xray:" in s]


def test_the_execution_role_pulls_the_image_and_writes_the_logs_only(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    role = _role_id(document, "MeshContainerembedTaskExecutionRole")
    actions = sorted(json.dumps(json.loads(s)["Action"]) for s in _grants(document, role, set()))
    assert actions == [
        '"ecr:GetAuthorizationToken"',
        '["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]',
        '["logs:CreateLogStream", "logs:PutLogEvents"]',
    ]


def test_cfn_lint_passes(boxed: tuple[Document, Path]) -> None:
    _, outdir = boxed
    result = cfn_lint(outdir / "asya-boxed.template.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_container_actors_in_nested_stacks_are_clean_and_within_the_plan(tmp_path: Path) -> None:
    """A small budget puts the container actors into nested stacks: the Fargate one's service refers to
    the main stack's cluster, the GPU one keeps its cluster and capacity; cdk-nag raises on a finding."""
    config = load_mesh(CONTAINERS).config
    app = cdk.App(outdir=str(tmp_path), context={"aws:cdk:bundling-stacks": []})
    stack = MeshStack(app, "asya-boxed", mesh=LoadedMesh(config=config, base=MESHES), stack_budget=40)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    plan = stack.mesh.plan
    assert [share.actors for share in plan.nested] == [("prepare", "embed"), ("transcribe",)]
    main = tmp_path / "asya-boxed.template.json"
    nested = sorted(tmp_path.glob("*.nested.template.json"))
    for share, file in zip(plan.nested, nested, strict=True):  # the actors' own estimates (`asya_cdk.plan`)
        template = json.loads(file.read_text())
        assert len(template["Resources"]) <= share.resources, (share.name, len(template["Resources"]))
        assert file.stat().st_size <= share.template_bytes, (share.name, file.stat().st_size)
    files = [main, *nested]
    for file in files:
        result = cfn_lint(file)
        assert result.returncode == 0, f"{file.name}: {result.stdout}{result.stderr}"
    services = [
        r for f in files for r in json.loads(f.read_text())["Resources"].values() if r["Type"] == "AWS::ECS::Service"
    ]
    assert len(services) == 2


def test_the_local_stack_keeps_the_task_definition_and_leaves_out_what_runs_tasks(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    template, _ = local_template(document)
    kinds = {r["Type"] for r in template["Resources"].values()}
    for gone in (
        "AWS::ECS::Service",
        "AWS::ECS::CapacityProvider",
        "AWS::ECS::ClusterCapacityProviderAssociations",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "AWS::AutoScaling::AutoScalingGroup",
        "AWS::EC2::LaunchTemplate",
    ):
        assert gone not in kinds, gone
    kept = set(template["Resources"])
    scaling_alarms = {k for k in resources(document, "AWS::CloudWatch::Alarm") if "Backlog" in k or "Idle" in k}
    assert scaling_alarms
    assert scaling_alarms & kept == set(), "their alarms go too"
    assert {_one(document, "AWS::ECS::TaskDefinition", a)[0] for a in ("embed", "transcribe")} <= kept
    assert _role_id(document, "MeshContainerembedRole") in kept
    assert not [p for p in template["Parameters"] if p.startswith("SsmParameterValue")], "the GPU AMI's, unused"
    lambda_alarms = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert lambda_alarms, "the mesh's own alarms stay"


def test_a_mesh_without_container_actors_has_no_cluster() -> None:
    config = MeshConfig.model_validate({"namespace": "plain", "actors": {"a": {"handler": "actors.handle"}}})
    app = cdk.App(context={"aws:cdk:bundling-stacks": []})
    stack = MeshStack(app, "asya-plain", mesh=LoadedMesh(config=config, base=MESHES))
    assert stack.mesh.cluster is None
    template = app.synth().get_stack_by_name("asya-plain").template
    assert not [r for r in template["Resources"].values() if r["Type"].startswith("AWS::ECS::")]
    assert stack.mesh.backlog is None
    assert not [k for k, r in template["Resources"].items() if "x-backlog" in json.dumps(r)], "no x-backlog, no rule"
    assert CONTAINER_SERVICES_OUTPUT not in template["Outputs"]  # so the console asks ECS nothing


def test_the_stack_says_where_each_container_actors_service_is(boxed: tuple[Document, Path]) -> None:
    """What the console and `asya queues` read to ask ECS how many tasks run (`ecs:DescribeServices`)."""
    document, _ = boxed
    services = json.loads(document["Outputs"][CONTAINER_SERVICES_OUTPUT]["Value"])
    _, embed = _one(document, "AWS::ECS::Service", "Containerembed")
    assert services == {
        "embed": {"cluster": "asya-boxed-containers", "service": embed["ServiceName"], "max": 6},
        "transcribe": {"cluster": "asya-boxed-transcribe", "service": "asya-boxed-transcribe", "max": 2},
    }
    clusters = {c["ClusterName"] for c in resources(document, "AWS::ECS::Cluster").values()}
    assert clusters == {"asya-boxed-containers", "asya-boxed-transcribe"}


def test_the_dashboard_draws_each_container_actors_tasks(boxed: tuple[Document, Path]) -> None:
    document, _ = boxed
    [dashboard] = resources(document, "AWS::CloudWatch::Dashboard").values()
    body = json.loads("".join(p if isinstance(p, str) else "x" for p in dashboard["DashboardBody"]["Fn::Join"][1]))
    [widget] = [w for w in body["widgets"] if w["properties"].get("title", "").startswith("Container actors: tasks")]
    metrics = widget["properties"]["metrics"]
    assert metrics[0][:6] == [
        "ECS/ContainerInsights",
        "RunningTaskCount",
        "ClusterName",
        "asya-boxed-containers",
        "ServiceName",
        "asya-boxed-embed",
    ]
    assert metrics[1][:6] == [
        "ECS/ContainerInsights",
        "RunningTaskCount",
        "ClusterName",
        "asya-boxed-transcribe",
        "ServiceName",
        "asya-boxed-transcribe",
    ]
    assert [m[1] for m in metrics[2:]] == ["DesiredTaskCount", "DesiredTaskCount"]
