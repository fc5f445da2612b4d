"""Where a deployed mesh is and how to call it, from its stack's name alone: what `asya smoke`,
`asya console --stack` and every task command given `--stack` share.

The stack's CloudFormation outputs give the gateway (`ApiUrl`), the results bucket (`ResultsBucket`),
the tables, and how the gateway is protected (`GatewayAuth`; a stack deployed before that output existed
is told by `ApiKeyId`). A request is then authenticated as the mesh wants it:

- `iam` (the default): signed with SigV4 from the caller's AWS credentials (`IamAuth`);
- `api_key`: the key's value, read once with `apigateway:GetApiKey` from `ApiKeyId`;
- `jwt`: `Authorization: Bearer <token>`, the token given with `--token` or in `ASYA_TOKEN`. A token given
  is sent whatever the mode says, so a caller decides how it proves who it is.

The AWS clients come from boto3's usual chain (profile, environment, SSO, role; the region the profile's,
`AWS_DEFAULT_REGION` or `AWS_REGION`), so the same lookup runs against a local stack when
`AWS_ENDPOINT_URL` points there (its gateway verifies SigV4 as API Gateway does). One shortcut: when the
local stack `asya up` recorded in `.asya/local.json` is the stack named and boto3 is not pointed at
another endpoint, that stack's own record is used (its gateway and API key, the endpoint's administrator).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from asya import variables
from asya_local.gateway_client import BearerAuth, GatewayClient, GatewayError, GatewayUnreachableError, IamAuth
from asya_local.issuer import local_gateway, of_state
from asya_local.roles import local_client

REQUIRED_OUTPUTS = ("ApiUrl", "ResultsBucket")
IAM, API_KEY, JWT = "iam", "api_key", "jwt"


class DiscoveryError(RuntimeError):
    """The mesh could not be found, reached or authenticated to; the message says what to do."""


def _default_client(service: str) -> Any:
    """A client from boto3's usual chain."""
    import boto3  # here and in `_aws`: only `--stack` calls AWS, and boto3 alone takes a tenth of a second

    return boto3.client(service)  # type: ignore[call-overload]


@dataclass
class DeployedMesh:
    """A mesh found from its stack: `where` is said before anything is sent (which account and region,
    or which local stack); `client(service)` makes AWS clients with the caller's credentials (the local
    administrator's for a local stack found through its record)."""

    stack: str
    where: str
    gateway: GatewayClient
    s3: Any
    bucket: str
    namespace: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    client: Callable[[str], Any] = field(default=_default_client)


def given_token(flag: str | None) -> str | None:
    """The bearer token the caller gave: `--token`, else `ASYA_TOKEN`, else none."""
    return flag or variables.TOKEN.read(os.environ)


def discover(stack: str, local_state: dict[str, str] | None = None, token: str | None = None) -> DeployedMesh:
    """The mesh a stack deployed, and how to reach it (`token`: a bearer token to send). `local_state`
    is what `asya up` recorded; it is used when it names this stack and boto3 points at its endpoint or
    nowhere in particular."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    local = local_state or {}
    try:
        if local.get("stack") == stack and endpoint in (None, local.get("endpoint")):
            mesh = _local(stack, local, token)
        else:
            mesh = _aws(stack, endpoint, token)
        mesh.namespace = str(mesh.gateway.health()["namespace"])
    except (BotoCoreError, ClientError) as exc:
        raise DiscoveryError(f"stack {stack!r}: {exc}") from None
    except GatewayUnreachableError as exc:
        hint = f" (is the local stack of {endpoint} still running?)" if endpoint else ""
        raise DiscoveryError(f"{exc}{hint}") from None
    except GatewayError as exc:
        raise DiscoveryError(f"the gateway of {stack!r} refused: {exc}") from None
    return mesh


def _local(stack: str, state: dict[str, str], token: str | None) -> DeployedMesh:
    endpoint = state["endpoint"]
    where = f"the local stack at {endpoint}"
    outputs = stack_outputs(local_client("cloudformation", endpoint), stack, where)
    gateway = local_gateway(state["gateway_url"], state["api_key"], of_state(state), token)

    def client(service: str) -> Any:
        return local_client(service, endpoint)

    return DeployedMesh(stack, where, gateway, client("s3"), outputs["ResultsBucket"], outputs=outputs, client=client)


def _aws(stack: str, endpoint: str | None, token: str | None) -> DeployedMesh:
    import boto3

    session = boto3.Session()
    if session.region_name is None and os.environ.get("AWS_REGION"):  # the variable Lambda and the SDKs set
        session = boto3.Session(region_name=os.environ["AWS_REGION"])
    region = session.region_name
    if region is None:
        raise DiscoveryError("no AWS region: set AWS_DEFAULT_REGION or the profile's region (the stack's region)")
    credentials = session.get_credentials()
    if credentials is None:
        raise DiscoveryError(
            "no AWS credentials: configure a profile (`aws configure`, `aws sso login`) or AWS_PROFILE"
        )
    account = session.client("sts").get_caller_identity()["Account"]
    where = f"account {account} in {region}" + (f" at {endpoint}" if endpoint else "")
    outputs = stack_outputs(session.client("cloudformation"), stack, where)
    mode = outputs.get("GatewayAuth") or (API_KEY if "ApiKeyId" in outputs else IAM)
    if token:
        gateway = GatewayClient(outputs["ApiUrl"], auth=BearerAuth(lambda: token))
    elif mode == JWT:
        raise DiscoveryError(
            f"the gateway of {stack!r} takes a signed-in caller's token (gateway.auth: jwt): "
            f"give --token or set {variables.TOKEN.name}"
            + (f" (`asya token --stack {stack}` gets one of its pool)" if "MachineClientId" in outputs else "")
        )
    elif mode == API_KEY:
        key = session.client("apigateway").get_api_key(apiKey=outputs["ApiKeyId"], includeValue=True)["value"]
        gateway = GatewayClient(outputs["ApiUrl"], key)
    else:
        gateway = GatewayClient(outputs["ApiUrl"], auth=IamAuth(credentials, region))

    def client(service: str) -> Any:
        return session.client(service)  # type: ignore[call-overload]

    return DeployedMesh(
        stack,
        where,
        gateway,
        session.client("s3"),
        outputs["ResultsBucket"],
        outputs=outputs,
        client=client,
    )


def stack_outputs(cloudformation: Any, stack: str, where: str) -> dict[str, str]:
    try:
        described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    except ClientError as exc:
        if "does not exist" in str(exc):
            raise DiscoveryError(f"no stack {stack!r} in {where} (`cdk deploy` names it asya-<namespace>)") from None
        raise
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}
    missing = [name for name in REQUIRED_OUTPUTS if name not in outputs]
    if missing:
        raise DiscoveryError(f"stack {stack!r} has no output {', '.join(missing)}: is it an asya mesh?")
    return outputs
