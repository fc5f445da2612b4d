"""A container actor's tasks as the console and `asya queues` show them: read from its ECS service
(`DescribeServices`, each request checked against ECS's model by botocore's stubber), found through
the stack's `ContainerServices` output; a mesh without that output asks ECS nothing, and a Lambda
actor's row and node stay as they were."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from rich.console import Console as RichConsole

from asya.names import CONTAINER_SERVICES_OUTPUT
from asya_cdk.container import container_services
from asya_cdk.loading import load_mesh
from asya_local import listing_cli, screen
from asya_local.console.app import Console
from asya_local.console.deployed import stack_topology
from asya_local.console.stats import ActorStats, AwsStats
from asya_local.console.topology import Topology
from asya_local.container_counts import ServicePlace, TaskCount, service_places, task_counts
from asya_local.listing_cli import queue_table
from asya_local.testing.moto_server import moto_server
from tests.support.console_client import console_client
from tests.unit.test_console import FakeGateway

VPC = "vpc: {subnets: [subnet-0a1b2c3d], security_groups: [sg-0a1b2c3d]}"
MESH = f"""
namespace: shop
actors:
  split: {{handler: mod.fn}}
  render: {{handler: mod.fn, runtime: container, {VPC}, container: {{max: 4}}}}
  transcribe:
    handler: mod.fn
    runtime: container
    architecture: x86_64
    {VPC}
    container: {{gpu: 1, cpu: 4, memory: 16384, max: 2}}
flows:
  media: {{route: [split, render, transcribe]}}
"""


def mesh_file(tmp_path: Path) -> Path:
    (tmp_path / "mod.py").write_text("def fn(payload):\n    return payload\n")
    (tmp_path / "mesh.yaml").write_text(MESH)
    return tmp_path / "mesh.yaml"


PLACES = {
    "render": ServicePlace("asya-shop-containers", "asya-shop-render", 4),
    "transcribe": ServicePlace("asya-shop-transcribe", "asya-shop-transcribe", 2),
}


def ecs_client() -> Any:
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return session.client("ecs")


def described(name: str, running: int, desired: int) -> dict[str, Any]:
    return {"serviceName": name, "runningCount": running, "desiredCount": desired}


def test_the_count_reads_running_of_most_and_scaled_to_zero() -> None:
    assert TaskCount(2, 2, 4).text() == "2 of 4 tasks"
    assert TaskCount(0, 0, 4).text() == "0 (scaled to zero)"
    assert TaskCount(1, 3, 4).text() == "1 of 4 tasks, 3 wanted"  # a cold start under way
    assert TaskCount(0, 1, 4).text() == "0 of 4 tasks, 1 wanted"
    assert (TaskCount(1, 3, 4).short(), TaskCount(2, 2, 4).short()) == ("1/4↑ tasks", "2/4 tasks")


def test_the_stacks_output_names_each_container_actors_service_and_cluster(tmp_path: Path) -> None:
    services = container_services(load_mesh(mesh_file(tmp_path)))
    assert services == {
        "render": {"cluster": "asya-shop-containers", "service": "asya-shop-render", "max": 4},
        "transcribe": {"cluster": "asya-shop-transcribe", "service": "asya-shop-transcribe", "max": 2},
    }
    assert service_places({CONTAINER_SERVICES_OUTPUT: json.dumps(services)}) == PLACES
    assert service_places({"ResultsBucket": "b"}) == {}  # no container actor, or a stack made before the output


def test_one_describe_services_per_cluster() -> None:
    ecs = ecs_client()
    with Stubber(ecs) as stub:
        stub.add_response(
            "describe_services",
            {"services": [described("asya-shop-render", 2, 2)]},
            {"cluster": "asya-shop-containers", "services": ["asya-shop-render"]},
        )
        stub.add_response(
            "describe_services",
            {"services": [], "failures": [{"arn": "x", "reason": "MISSING"}]},
            {"cluster": "asya-shop-transcribe", "services": ["asya-shop-transcribe"]},
        )
        counts = task_counts(ecs, PLACES)
    assert counts == {"render": TaskCount(2, 2, 4)}  # a service ECS does not know is not shown as zero


class Session:
    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients

    def client(self, service: str) -> Any:
        if service not in self.clients:
            raise AssertionError(f"{service} was not to be asked")
        return self.clients[service]


def aws_stats(places: dict[str, ServicePlace], clients: dict[str, Any]) -> dict[str, ActorStats]:
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    for name in ("sqs", "cloudwatch", "dynamodb"):
        clients[name] = session.client(name)
    stubs = [Stubber(found) for found in clients.values()]
    stubs[0].add_response("list_queues", {"QueueUrls": []}, {"QueueNamePrefix": "asya-shop-"})
    stubs[1].add_response(
        "get_metric_data", {"MetricDataResults": []}, {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY}
    )
    if "ecs" in clients:
        stubs[3].add_response(
            "describe_services",
            {"services": [described("asya-shop-render", 0, 0)]},
            {"cluster": "asya-shop-containers", "services": ["asya-shop-render"]},
        )
    for stub in stubs:
        stub.activate()
    actors = ["split", *places]
    stats = AwsStats(Session(clients), "shop", actors=actors, spark_actors=[], batches_table=None, places=places)
    found = stats.actor_stats()
    for stub in stubs:
        stub.assert_no_pending_responses()
    return found


def test_a_deployed_mesh_shows_its_container_actors_tasks_and_only_theirs() -> None:
    render = {"render": PLACES["render"]}
    stats = aws_stats(render, {"sqs": None, "cloudwatch": None, "dynamodb": None, "ecs": ecs_client()})
    assert stats["render"].tasks == "0 (scaled to zero)"
    assert stats["render"].to_json()["tasks"] == "0 (scaled to zero)"
    assert stats["split"].tasks is None
    assert "tasks" not in stats["split"].to_json()  # a Lambda actor's figures are as they were

    without = aws_stats({}, {"sqs": None, "cloudwatch": None, "dynamodb": None})  # no ecs client: never asked
    assert without["split"].tasks is None


def test_a_deployed_container_actor_is_a_container_node_without_a_function() -> None:
    class Functions:
        def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
            assert FunctionName == "asya-shop-split", "a container actor has no function to ask"
            return {"Environment": {"Variables": {}}}

    queues = [
        {"ResourceType": "AWS::SQS::Queue", "PhysicalResourceId": f"https://sqs/1/asya-shop-{name}"}
        for name in ("split", "render")
    ]
    topology = stack_topology("shop", queues, Functions(), {"media": ["split", "render"]}, containers={"render"})
    assert {node.name: node.kind for node in topology.nodes if node.kind != "crew"} == {
        "split": "lambda",
        "render": "container",
    }


def printed(table: Any) -> str:
    screen = RichConsole(width=120, record=True)
    screen.print(table)
    return screen.export_text()


def test_asya_queues_adds_a_tasks_column_only_for_a_mesh_with_container_actors() -> None:
    depths = {"asya-shop-split": (1, 0, 0), "asya-shop-render": (3, 2, 0)}
    shown = printed(queue_table(depths, {"asya-shop-render": TaskCount(2, 2, 4)}))
    lines = {line.split("│")[1].strip(): line for line in shown.splitlines() if "asya-shop-" in line}
    assert "tasks" in shown.splitlines()[2]
    assert "2 of 4 tasks" in lines["asya-shop-render"]
    assert "tasks" not in lines["asya-shop-split"]
    assert "tasks" not in printed(queue_table(depths))  # a mesh of Lambda actors: the table as before


class FixedStats:
    def actor_stats(self) -> dict[str, ActorStats]:
        return {
            "split": ActorStats(visible=1),
            "render": ActorStats(visible=3, tasks="1 of 4 tasks, 3 wanted", task_count="1/4↑ tasks"),
        }


def test_the_console_draws_a_container_actors_count_in_its_node_row_and_page(tmp_path: Path) -> None:
    topology = Topology.of_mesh(load_mesh(mesh_file(tmp_path)))
    console = Console(topology, FixedStats(), FakeGateway(), "the local stack", refresh=0.01)  # type: ignore[arg-type]
    client = console_client(console)
    page = client.get("/").get_data(as_text=True)
    render = page[page.index('data-actor="render"') :]
    node = render[: render.index("</g>")]
    assert '<tspan data-stat="task_count">1/4↑ tasks</tspan>' in node
    assert '<title data-stat="tasks">1 of 4 tasks, 3 wanted</title>' in node
    assert ">ECS</text>" in node
    assert 'container: <span data-stat="tasks">1 of 4 tasks, 3 wanted</span>' in page  # its row in the table
    split = page[page.index('data-actor="split"') :]
    assert "task" not in split[: split.index("</g>")]  # a Lambda actor's node as before
    actor = client.get("/actors/render").get_data(as_text=True)
    assert '<dt>tasks</dt><dd data-stat="tasks">1 of 4 tasks, 3 wanted</dd>' in actor
    assert "container (ECS)" in actor


def test_asya_queues_on_the_local_stack_reads_the_services_asya_up_recorded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`asya queues` in another process than `asya up`: the services come from the state it wrote."""
    with moto_server() as endpoint:
        sqs, ecs = boto3.client("sqs", endpoint_url=endpoint), boto3.client("ecs", endpoint_url=endpoint)
        for name in ("split", "render"):
            sqs.create_queue(QueueName=f"asya-shop-{name}")
        ecs.create_cluster(clusterName="asya-shop-containers")
        ecs.register_task_definition(
            family="asya-shop-render", containerDefinitions=[{"name": "consumer", "image": "a", "memory": 512}]
        )
        ecs.create_service(
            cluster="asya-shop-containers", serviceName="asya-shop-render", taskDefinition="asya-shop-render"
        )
        ecs.update_service(cluster="asya-shop-containers", service="asya-shop-render", desiredCount=3)
        render = {"render": {"cluster": "asya-shop-containers", "service": "asya-shop-render", "max": 4}}
        state = {"endpoint": endpoint, "namespace": "shop", "container_services": json.dumps(render)}
        monkeypatch.setattr(listing_cli, "running_state", lambda: state)
        monkeypatch.setattr(screen.console, "width", 120)

        assert listing_cli.queues(argparse.Namespace(stack=None, watch=False)) == 0

    lines = {line.split("│")[1].strip(): line for line in capsys.readouterr().out.splitlines() if "asya-shop-" in line}
    assert "3 of 4 tasks" in lines["asya-shop-render"]
    assert "tasks" not in lines["asya-shop-split"]
