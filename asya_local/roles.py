"""Credentials of a deployed role, as the AWS service that runs with it gets them.

On AWS, Lambda assumes a function's execution role and hands the handler temporary credentials in
`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`; EMR Serverless does the same with
a job run's execution role. Locally the administrator assumes the role on the local endpoint in the
service's place, after checking that the role's trust policy names that service, so a role the service
could not assume fails here too. The trust policy's conditions (`aws:SourceArn`, `aws:SourceAccount`)
are not checked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from botocore.config import Config

from asya import variables
from asya_local import admin_key
from asya_local.functions.lambda_shapes import REGION

LAMBDA = "lambda.amazonaws.com"
ECS_TASKS = "ecs-tasks.amazonaws.com"  # a container actor's task role
EMR_SERVERLESS = "emr-serverless.amazonaws.com"
SESSION_SECONDS = 3600  # Lambda's own sessions last up to 12 h; the local endpoint does not expire them


def iam_enforced() -> bool:
    """`ASYA_LOCAL_IAM=off` turns the local endpoint's authorization off, for debugging only."""
    return variables.LOCAL_IAM.read(os.environ)


def role_environment(client: Any, role_arn: str, service: str, session: str) -> dict[str, str]:
    """The three credential variables of a fresh session of `role_arn`, taken on behalf of `service`
    (`client` builds the administrator's boto3 clients). Raises if the role does not trust the service."""
    from asya_local.endpoint.moto_iam import trusted_services  # moto: only a starting stack needs it, not the CLI

    role = client("iam").get_role(RoleName=role_arn.rsplit("/", 1)[-1])["Role"]
    trust = role["AssumeRolePolicyDocument"]
    document = trust if isinstance(trust, str) else json.dumps(trust)
    if service not in trusted_services(unquote(document)):
        raise RuntimeError(
            f"role {role_arn} does not trust {service} to assume it (its trust policy allows "
            f"{sorted(trusted_services(unquote(document))) or 'no service'}): {session} could not run on AWS either"
        )
    credentials = client("sts").assume_role(
        RoleArn=role_arn, RoleSessionName=session[:64], DurationSeconds=SESSION_SECONDS
    )["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
        "AWS_SESSION_TOKEN": credentials["SessionToken"],
    }


def role_permits(client: Any) -> Callable[[str, str, str], bool]:
    """Whether a role's identity policies (inline and attached, read when asked) allow an action on a
    resource, by the local endpoint's evaluation: for what an AWS service does with the role's session
    outside any request the endpoint sees (the ECS agent's `UpdateTaskProtection`, `asya_local.task_agent`).
    Everything is allowed with `ASYA_LOCAL_IAM=off`."""
    from asya_local.endpoint.moto_iam import Request, decide  # moto: only a starting stack needs it

    def permits(role_arn: str, action: str, resource: str) -> bool:
        if not iam_enforced():
            return True
        iam, name = client("iam"), role_arn.rsplit("/", 1)[-1]
        documents = [
            iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"]
            for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]
        ]
        for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
            version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
            documents.append(
                iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"]
            )
        texts = [unquote(d) if isinstance(d, str) else json.dumps(d) for d in documents]
        return decide(texts, Request(action, (resource,), {}))

    return permits


def local_client(service: str, endpoint: str, credentials: dict[str, str] | None = None) -> Any:
    """A boto3 client for the local endpoint and region, with the administrator's credentials (the stack,
    the CLI and the tests: `asya_local.admin_key`) or the given ones (a role session's three
    variables: every function works with one)."""
    import boto3  # loaded by the first client: the `asya` commands that never make one start without it

    given = credentials or admin_key.credentials(endpoint)
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=given["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=given["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=given.get("AWS_SESSION_TOKEN"),
        config=Config(retries={"mode": "standard", "max_attempts": 5}),
    )
