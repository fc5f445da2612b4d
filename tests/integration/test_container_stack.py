"""A mesh with container actors on the local stack (docs/mesh.md, "Container actors"): the template
deploys, with what runs or scales tasks on AWS left out (the services, the GPU capacity, the scaling)
and the rest made: the actors' queues, task roles and log groups, the cluster, and the task
definitions, whose variables the endpoint resolves as a deployed one's; the Lambda actor beside them
runs as before. The services found are those the local scaler keeps, which the console reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from asya_local.container_actors import CONSUMER
from asya_local.container_counts import service_places, task_counts
from asya_local.endpoint.process import LocalEndpoint
from tests.support.stack import deployed

pytestmark = pytest.mark.integration

MESH = """\
namespace: itest-boxes
actors:
  prepare: {handler: actors.handle}
  embed:
    handler: actors.handle
    runtime: container
    vpc: {subnets: [subnet-0123456789abcdef0], security_groups: [sg-0123456789abcdef0]}
    container: {cpu: 0.5, memory: 1024, concurrency: 2}
  transcribe:
    handler: actors.handle
    runtime: container
    architecture: x86_64
    vpc: {subnets: [subnet-0123456789abcdef0], security_groups: [sg-0123456789abcdef0]}
    container: {gpu: 1, cpu: 4, memory: 15000}
"""


@pytest.mark.timeout(300)
def test_container_actors_deploy_without_what_runs_their_tasks(endpoint: LocalEndpoint, tmp_path: Path) -> None:
    (tmp_path / "mesh.yaml").write_text(MESH)
    (tmp_path / "actors.py").write_text("def handle(payload):\n    return payload\n")
    with deployed(endpoint, tmp_path / "mesh.yaml", lambda _source, _line: None) as stack:
        cloudformation = stack.client("cloudformation")
        status = cloudformation.describe_stacks(StackName=stack.stack_name)["Stacks"][0]["StackStatus"]
        assert status == "CREATE_COMPLETE"
        ecs = stack.client("ecs")
        clusters = " ".join(ecs.list_clusters()["clusterArns"])
        assert "asya-itest-boxes-containers" in clusters
        assert "asya-itest-boxes-transcribe" in clusters, "a GPU actor's own, its capacity left out"
        # not the template's services: those the local scaler keeps at the consumers it runs, what the
        # console and `asya queues` read (`asya_local.container_counts`)
        for cluster, service in (("containers", "embed"), ("transcribe", "transcribe")):
            [arn] = ecs.list_services(cluster=f"asya-itest-boxes-{cluster}")["serviceArns"]
            assert arn.endswith(f"/asya-itest-boxes-{service}")
        counts = task_counts(ecs, service_places(stack.outputs))
        assert {actor: count.text() for actor, count in counts.items()} == {
            "embed": "0 (scaled to zero)",
            "transcribe": "0 (scaled to zero)",
        }
        gpu = ecs.describe_task_definition(taskDefinition="asya-itest-boxes-transcribe")["taskDefinition"]
        assert gpu["containerDefinitions"][0]["resourceRequirements"] == [{"type": "GPU", "value": "1"}]
        scaling = stack.client("application-autoscaling").describe_scalable_targets(ServiceNamespace="ecs")
        assert [t["ResourceId"] for t in scaling["ScalableTargets"] if "itest-boxes" in t["ResourceId"]] == []
        groups = stack.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
        assert [g for g in groups if "itest-boxes" in g["AutoScalingGroupName"]] == []
        queue_url = stack.client("sqs").get_queue_url(QueueName="asya-itest-boxes-embed")["QueueUrl"]
        task = ecs.describe_task_definition(taskDefinition="asya-itest-boxes-embed")["taskDefinition"]
        (container,) = task["containerDefinitions"]
        variables = {variable["name"]: variable["value"] for variable in container["environment"]}
        assert container["entryPoint"] == ["python3", "-m", "asya.consumer"]
        # resolved by the endpoint as moto's CloudFormation writes a queue's URL (its AWS host): the same queue
        assert variables["ASYA_QUEUE_URL"].endswith(queue_url.split("/", 3)[3])
        assert (variables["ASYA_ACTOR_NAME"], variables["ASYA_CONSUMER_CONCURRENCY"]) == ("embed", "2")
        assert variables["ASYA_TASKS_TABLE"] == "asya-itest-boxes-tasks"
        # the task role, as on AWS (`asya_local.endpoint.moto_ecs`): whose session the consumer runs with
        role = stack.client("iam").get_role(RoleName=task["taskRoleArn"].rsplit("/", 1)[1])["Role"]
        assert role["Description"] == "asya actor itest-boxes/embed"
        assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "ecs-tasks.amazonaws.com"}
        assert (task["cpu"], task["memory"], task["networkMode"]) == ("512", "1024", "awsvpc")
        consumers = {f.name: f.handler for f in stack.functions if f.name.endswith(("-embed", "-transcribe"))}
        assert consumers == {"asya-itest-boxes-embed": CONSUMER, "asya-itest-boxes-transcribe": CONSUMER}, "no function"
        assert "asya-itest-boxes-prepare" in [f.name for f in stack.functions], "the Lambda actor runs as before"
