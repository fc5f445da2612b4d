"""Cognito user pools on the local stack: moto's CloudFormation does not know them, so each pool of a
template (`gateway.jwt.cognito`), its resource servers and its app clients are created through moto's
Cognito API before the stack is, and the template refers to what was made. The pool issues no tokens
here: the local issuer plays it (`asya_local.issuer`), with the pool's issuer URL, so the gateway trusts
the same issuer as on AWS."""

from __future__ import annotations

from typing import Any

from asya_local.functions.lambda_shapes import REGION
from asya_local.template_refs import without_resources

USER_POOL = "AWS::Cognito::UserPool"
RESOURCE_SERVER = "AWS::Cognito::UserPoolResourceServer"
CLIENT = "AWS::Cognito::UserPoolClient"


def create_user_pools(cognito: Any, template: dict[str, Any]) -> dict[str, Any]:
    """The template without its user pools, servers and clients, made through `cognito` instead."""
    resources = template["Resources"]
    values: dict[tuple[str, str], str] = {}
    for logical_id, resource in resources.items():
        if resource["Type"] == USER_POOL:
            name = resource["Properties"].get("UserPoolName", logical_id)
            pool = cognito.create_user_pool(PoolName=name)["UserPool"]
            provider = f"cognito-idp.{REGION}.amazonaws.com/{pool['Id']}"
            values |= {(logical_id, "Ref"): pool["Id"], (logical_id, "Arn"): pool["Arn"]}
            values |= {(logical_id, "ProviderName"): provider, (logical_id, "ProviderURL"): f"https://{provider}"}
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        pool_ref = properties.get("UserPoolId")
        pool_id = values.get((str(pool_ref.get("Ref")), "Ref")) if isinstance(pool_ref, dict) else None
        if pool_id is None:
            continue
        if resource["Type"] == RESOURCE_SERVER:
            identifier = properties["Identifier"]
            scopes = properties.get("Scopes", [])
            name = properties.get("Name", identifier)
            cognito.create_resource_server(UserPoolId=pool_id, Identifier=identifier, Name=name, Scopes=scopes)
            values[(logical_id, "Ref")] = identifier
        elif resource["Type"] == CLIENT:
            name = properties.get("ClientName", logical_id)
            client = cognito.create_user_pool_client(UserPoolId=pool_id, ClientName=name, GenerateSecret=False)
            values[(logical_id, "Ref")] = client["UserPoolClient"]["ClientId"]
    return without_resources(template, values)
