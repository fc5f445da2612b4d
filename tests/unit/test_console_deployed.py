"""The console of a mesh on AWS, without AWS: the mesh read from its stack's resources (nested stacks
too), its functions and its gateway's flows; the stats asked of SQS, CloudWatch (once a minute, SEARCH
expressions over the sidecar's own metrics) and the Spark batches table, each request checked against
the service's model by botocore's stubber."""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from asya_local.console.deployed import stack_resources, stack_topology
from asya_local.console.stats import AwsStats

NS = "shop"


def client(service: str) -> Any:
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return session.client(service)  # type: ignore[call-overload]  # a service named at run time


def queue(name: str) -> dict[str, str]:
    return {"ResourceType": "AWS::SQS::Queue", "PhysicalResourceId": f"https://sqs.us-east-1.amazonaws.com/1/{name}"}


def function(name: str) -> dict[str, str]:
    return {"ResourceType": "AWS::Lambda::Function", "PhysicalResourceId": name}


def test_the_mesh_is_read_from_its_stack_and_nested_stacks() -> None:
    cloudformation = client("cloudformation")
    nested = "arn:aws:cloudformation:us-east-1:1:stack/asya-shop-Actors1/abc"
    main_resources = [
        queue("asya-shop-x-sink"),
        queue("asya-shop-x-sump"),
        queue("asya-shop-x-sump-dlq"),
        queue("asya-shop-gateway-stream-dlq"),
        {"ResourceType": "AWS::CloudFormation::Stack", "PhysicalResourceId": nested},
    ]
    nested_resources = [
        queue("asya-shop-split"),
        queue("asya-shop-crunch"),
        queue("asya-shop-report"),
        function("asya-shop-split"),
        function("asya-shop-crunch"),
        function("asya-shop-x-collect-crunch"),
        function("asya-shop-report"),
    ]
    with Stubber(cloudformation) as stub:
        for stack, resources in (("asya-shop", main_resources), (nested, nested_resources)):
            summaries = [
                {
                    **r,
                    "LogicalResourceId": "L",
                    "ResourceStatus": "CREATE_COMPLETE",
                    "LastUpdatedTimestamp": dt.datetime(2026, 1, 1),
                }
                for r in resources
            ]
            stub.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": stack})
        found = list(stack_resources(cloudformation, "asya-shop"))
    assert len(found) == len(main_resources) - 1 + len(nested_resources)

    class Functions:
        def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
            join = {"ASYA_JOIN": '{"tolerate":"10%"}'} if FunctionName == "asya-shop-report" else {}
            return {"Environment": {"Variables": {"ASYA_NAMESPACE": NS, **join}}}

    flows = {"reports": ["split", "crunch", "report"]}
    topology = stack_topology(NS, found, Functions(), flows)
    nodes = {node.name: (node.kind, node.join) for node in topology.nodes}
    assert nodes == {
        "split": ("lambda", None),
        "crunch": ("spark", None),
        "report": ("lambda", "tolerate 10%"),
        "x-pause": ("crew", None),
        "x-sink": ("crew", None),
        "x-sump": ("crew", None),
    }
    assert topology.flows == {"reports": ("split", "crunch", "report")}


class Session:
    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients

    def client(self, service: str) -> Any:
        return self.clients[service]


def test_the_stats_come_from_sqs_every_time_and_from_cloudwatch_once_a_minute() -> None:
    clients = {name: client(name) for name in ("sqs", "cloudwatch", "dynamodb")}
    now = [0.0]
    stats = AwsStats(
        Session(clients),
        NS,
        actors=["split", "crunch"],
        spark_actors=["crunch"],
        batches_table="asya-shop-spark-batches",
        clock=lambda: now[0],
    )
    urls = [f"https://sqs/1/asya-shop-{name}" for name in ("split", "crunch")]
    attributes = {
        "ApproximateNumberOfMessages": "4",
        "ApproximateNumberOfMessagesNotVisible": "2",
        "ApproximateNumberOfMessagesDelayed": "1",
    }
    stubs = {name: Stubber(found) for name, found in clients.items()}
    for _ in range(2):
        stubs["sqs"].add_response("list_queues", {"QueueUrls": urls}, {"QueueNamePrefix": "asya-shop-"})
        for url in urls:
            stubs["sqs"].add_response(
                "get_queue_attributes", {"Attributes": attributes}, {"QueueUrl": url, "AttributeNames": ["All"]}
            )
        stubs["dynamodb"].add_response(
            "query",
            {"Count": 2, "Items": [{"size": {"N": "10"}}, {"size": {"N": "5"}}]},
            {
                "TableName": "asya-shop-spark-batches",
                "IndexName": "open",
                "KeyConditionExpression": "open_actor = :actor",
                "ExpressionAttributeValues": {":actor": {"S": "shop#crunch#"}},
                "ProjectionExpression": "#size",
                "ExpressionAttributeNames": {"#size": "size"},
            },
        )
    results = [
        {"Id": "age0", "Values": [12.0, 30.0]},
        {"Id": "processed0", "Values": [60.0, 90.0]},
        {"Id": "failed0", "Values": [2.0]},
        {"Id": "age1", "Values": []},
    ]
    stubs["cloudwatch"].add_response(
        "get_metric_data", {"MetricDataResults": results}, {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY}
    )
    for stub in stubs.values():
        stub.activate()
    first = stats.actor_stats()
    now[0] = 30.0  # within the minute: no second GetMetricData (the stubber would refuse it)
    second = stats.actor_stats()
    for stub in stubs.values():
        stub.assert_no_pending_responses()
    assert first == second
    split, crunch = first["split"], first["crunch"]
    assert (split.visible, split.in_flight, split.delayed) == (4, 2, 1)
    assert (split.age_seconds, split.per_minute, split.failed) == (30.0, 30.0, 2)
    assert (crunch.open_batches, crunch.per_minute) == (2, 0.0)
    assert crunch.in_flight == 2 + 15, "in flight: in SQS, and in its running jobs (their messages deleted once staged)"


def test_the_metric_queries_search_the_sidecars_own_dimensions() -> None:
    stats = AwsStats(
        Session({name: client(name) for name in ("sqs", "cloudwatch", "dynamodb")}),
        NS,
        actors=["split"],
        spark_actors=[],
        batches_table=None,
    )
    asked: list[dict[str, Any]] = []

    class Paginator:
        def paginate(self, **request: Any) -> list[dict[str, Any]]:
            asked.append(request)
            return [{"MetricDataResults": []}]

    stats.cloudwatch = type("CloudWatch", (), {"get_paginator": lambda _self, _name: Paginator()})()
    stats._read_metrics()
    queries = {query["Id"]: query for query in asked[0]["MetricDataQueries"]}
    assert queries["age0"]["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "QueueName", "Value": "asya-shop-split"}]
    search = '{Asya,mesh,actor,outcome} MetricName="MessagesProcessed" mesh="shop" actor="split"'
    assert queries["processed0"]["Expression"] == f"SUM(SEARCH('{search}', 'Sum', 60))"
    assert "{Asya,mesh,actor,reason}" in queries["failed0"]["Expression"]
