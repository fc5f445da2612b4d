"""Cognito user pools on the local stack: moto's CloudFormation does not know them, so each pool of a
template (`gateway.jwt.cognito`), its resource servers, app clients, groups and domain are created
through moto's Cognito API before the stack is, and the template refers to what was made. The pool
issues no tokens here: the local issuer plays it (`asya_local.issuer`), with the pool's issuer URL, so
the gateway trusts the same issuer as on AWS, and it mints for each client only what the pool would
grant it (`pool_clients`: the clients' OAuth flows and scopes, as the template made them)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.template_refs import without_resources

USER_POOL = "AWS::Cognito::UserPool"
RESOURCE_SERVER = "AWS::Cognito::UserPoolResourceServer"
CLIENT = "AWS::Cognito::UserPoolClient"
GROUP = "AWS::Cognito::UserPoolGroup"
DOMAIN = "AWS::Cognito::UserPoolDomain"
# made in this order: a client's scopes name its resource server
PARTS = (RESOURCE_SERVER, CLIENT, GROUP, DOMAIN)
PSEUDO = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::URLSuffix": "amazonaws.com"}
# what a client's OAuth settings are called in the template, and in Cognito's API
OAUTH_SETTINGS = {
    "AllowedOAuthFlows": "AllowedOAuthFlows",
    "AllowedOAuthScopes": "AllowedOAuthScopes",
    "AllowedOAuthFlowsUserPoolClient": "AllowedOAuthFlowsUserPoolClient",
    "CallbackURLs": "CallbackURLs",
    "ExplicitAuthFlows": "ExplicitAuthFlows",
}


def create_user_pools(cognito: Any, template: dict[str, Any]) -> dict[str, Any]:
    """The template without its user pools and their parts, made through `cognito` instead."""
    resources = template["Resources"]
    values: dict[tuple[str, str], str] = {}
    for logical_id, resource in resources.items():
        if resource["Type"] == USER_POOL:
            name = resource["Properties"].get("UserPoolName", logical_id)
            pool = cognito.create_user_pool(PoolName=name)["UserPool"]
            provider = f"cognito-idp.{REGION}.amazonaws.com/{pool['Id']}"
            values |= {(logical_id, "Ref"): pool["Id"], (logical_id, "Arn"): pool["Arn"]}
            values |= {(logical_id, "ProviderName"): provider, (logical_id, "ProviderURL"): f"https://{provider}"}
    for kind in PARTS:
        for logical_id, resource in resources.items():
            properties = resource.get("Properties", {})
            pool_ref = properties.get("UserPoolId")
            pool_id = values.get((str(pool_ref.get("Ref")), "Ref")) if isinstance(pool_ref, dict) else None
            if resource["Type"] == kind and pool_id is not None:
                values[(logical_id, "Ref")] = _create(cognito, kind, pool_id, _resolved(properties, values))
    return without_resources(template, values)


def _create(cognito: Any, kind: str, pool_id: str, properties: dict[str, Any]) -> str:
    """Make one part of a pool; returns what its `Ref` is."""
    if kind == RESOURCE_SERVER:
        identifier = properties["Identifier"]
        name = properties.get("Name", identifier)
        scopes = properties.get("Scopes", [])
        cognito.create_resource_server(UserPoolId=pool_id, Identifier=identifier, Name=name, Scopes=scopes)
        return str(identifier)
    if kind == CLIENT:
        settings = {ours: properties[theirs] for theirs, ours in OAUTH_SETTINGS.items() if theirs in properties}
        client = cognito.create_user_pool_client(
            UserPoolId=pool_id,
            ClientName=properties.get("ClientName", "client"),
            GenerateSecret=bool(properties.get("GenerateSecret", False)),
            **settings,
        )
        return str(client["UserPoolClient"]["ClientId"])
    if kind == GROUP:
        name = properties["GroupName"]
        cognito.create_group(UserPoolId=pool_id, GroupName=name, Description=properties.get("Description", ""))
        return str(name)
    cognito.create_user_pool_domain(UserPoolId=pool_id, Domain=properties["Domain"])
    return str(properties["Domain"])


def _resolved(node: Any, values: dict[tuple[str, str], str]) -> Any:
    """`node` with the references a pool's parts make (`Ref` to what was made, to the pseudo
    parameters, `Fn::Join`) replaced by their values."""
    if isinstance(node, list):
        return [_resolved(item, values) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Ref"}:
        return PSEUDO.get(node["Ref"]) or values.get((node["Ref"], "Ref"), node)
    if set(node) == {"Fn::Join"}:
        separator, parts = node["Fn::Join"]
        return str(separator).join(str(_resolved(part, values)) for part in parts)
    return {key: _resolved(value, values) for key, value in node.items()}


def pool_clients(cognito: Any, pool_id: str) -> list[dict[str, Any]]:
    """Each client of the pool: its id, OAuth flows and scopes (what the local issuer may mint for it)."""
    clients = cognito.list_user_pool_clients(UserPoolId=pool_id, MaxResults=60)["UserPoolClients"]
    described = [
        cognito.describe_user_pool_client(UserPoolId=pool_id, ClientId=c["ClientId"])["UserPoolClient"] for c in clients
    ]
    return [
        {"id": c["ClientId"], "flows": c.get("AllowedOAuthFlows", []), "scopes": c.get("AllowedOAuthScopes", [])}
        for c in described
    ]


def pool_client(cognito: Any, pool_id: str, client_id: str) -> dict[str, Any] | None:
    """One client of the pool as `DescribeUserPoolClient` answers (None if the pool has no such
    client): what the local hosted sign-in checks a request against (`asya_local.hosted_sign_in`)."""
    try:
        return dict(cognito.describe_user_pool_client(UserPoolId=pool_id, ClientId=client_id)["UserPoolClient"])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise
