"""The local stack finds a container actor by the agreement with the CDK app (docs/local-stack.md,
"Container actors"): a task definition whose container sets `ASYA_QUEUE_URL`; its variables as a task
gets them (references resolved), its task role, and the folder its image is built from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3

from asya_local.container_actors import container_actors
from asya_local.deploy import Synthesized
from asya_local.deployed_functions import ContainerTrigger

TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "asya-n-gpu"}},
        "TaskRole": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            },
        },
        "Task": {
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {
                "Family": "asya-n-gpu",
                "TaskRoleArn": {"Fn::GetAtt": ["TaskRole", "Arn"]},
                "Memory": "8192",
                "ContainerDefinitions": [
                    {
                        "Name": "Consumer",
                        "Image": {"Fn::Sub": "123456789012.dkr.ecr.us-east-1.amazonaws.com/assets:abc123"},
                        "Environment": [
                            {"Name": "ASYA_ACTOR_NAME", "Value": "gpu"},
                            {"Name": "ASYA_QUEUE_URL", "Value": {"Ref": "Queue"}},
                            {"Name": "ASYA_HOP_TIME_LIMIT_SECONDS", "Value": "7200"},
                        ],
                    }
                ],
            },
        },
        "OtherTask": {  # a task definition of something else: not an actor
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {
                "Family": "other",
                "Memory": "512",
                "ContainerDefinitions": [{"Name": "x", "Image": "nginx"}],
            },
        },
    }
}


def moto_client(service: str) -> Any:
    return boto3.client(service)  # type: ignore[call-overload]


def test_a_container_actor_is_found_by_its_task_definition(dynamodb: Any, tmp_path: Path) -> None:
    boto3.client("cloudformation").create_stack(StackName="mesh", TemplateBody=json.dumps(TEMPLATE))
    synthesized = Synthesized("mesh", TEMPLATE, {}, tmp_path, image_dirs={"abc123": tmp_path / "image"})

    [actor] = container_actors(moto_client, synthesized, lambda _family: (0, 3, 5))

    queue_url = boto3.client("sqs").get_queue_url(QueueName="asya-n-gpu")["QueueUrl"]
    assert actor.name == "asya-n-gpu"
    assert actor.environment["ASYA_QUEUE_URL"] == queue_url  # resolved, as the task gets it
    assert actor.environment["ASYA_ACTOR_NAME"] == "gpu"
    assert actor.trigger == ContainerTrigger(queue_url, min_tasks=0, max_tasks=3, messages_per_task=5)
    assert actor.timeout == 7200
    assert actor.code_dir == tmp_path / "image" / "task"
    role = boto3.client("iam").get_role(RoleName=actor.role.rsplit("/", 1)[-1])["Role"]
    assert role["Arn"] == actor.role


def test_a_mesh_without_container_actors_asks_the_endpoint_nothing(tmp_path: Path) -> None:
    lambda_only = {"Resources": {"Queue": TEMPLATE["Resources"]["Queue"]}}

    def no_client(service: str) -> Any:
        raise AssertionError(f"asked {service}")

    assert container_actors(no_client, Synthesized("mesh", lambda_only, {}, tmp_path), lambda _family: (0, 1, 1)) == []
