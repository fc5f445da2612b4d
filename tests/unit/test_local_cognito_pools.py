"""The local stack makes a mesh's Cognito pool through moto's Cognito API, as moto's CloudFormation does
not know pools: its clients keep the OAuth flows and scopes the template gives them (the local issuer
mints by them), and its group and domain are made, every reference to them replaced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya_local.cognito_pools import create_user_pools, pool_clients
from asya_local.functions.lambda_shapes import ACCOUNT, REGION

SCOPE = {"Fn::Join": ["", [{"Ref": "Server"}, "/admin"]]}
TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Pool": {"Type": "AWS::Cognito::UserPool", "Properties": {"UserPoolName": "asya-n"}},
        "People": {
            "Type": "AWS::Cognito::UserPoolClient",
            "Properties": {"UserPoolId": {"Ref": "Pool"}, "ClientName": "asya-n", "AllowedOAuthFlows": ["code"],
                           "AllowedOAuthScopes": ["openid"], "AllowedOAuthFlowsUserPoolClient": True,
                           "CallbackURLs": ["http://localhost:8080/callback"], "GenerateSecret": False},
        },
        "Machine": {
            "Type": "AWS::Cognito::UserPoolClient",
            "Properties": {"UserPoolId": {"Ref": "Pool"}, "ClientName": "asya-n-machine",
                           "AllowedOAuthFlows": ["client_credentials"], "AllowedOAuthScopes": [SCOPE],
                           "AllowedOAuthFlowsUserPoolClient": True, "GenerateSecret": True},
        },
        "Server": {
            "Type": "AWS::Cognito::UserPoolResourceServer",
            "Properties": {"UserPoolId": {"Ref": "Pool"}, "Identifier": "asya-n", "Name": "asya-n",
                           "Scopes": [{"ScopeName": "admin", "ScopeDescription": "sees every task"}]},
        },
        "Admins": {
            "Type": "AWS::Cognito::UserPoolGroup",
            "Properties": {"UserPoolId": {"Ref": "Pool"}, "GroupName": "admins"},
        },
        "Domain": {
            "Type": "AWS::Cognito::UserPoolDomain",
            "Properties": {"UserPoolId": {"Ref": "Pool"},
                           "Domain": {"Fn::Join": ["", ["asya-n-", {"Ref": "AWS::AccountId"}]]}},
        },
    },
    "Outputs": {
        "MachineClientId": {"Value": {"Ref": "Machine"}},
        "TokenUrl": {"Value": {"Fn::Join": ["", ["https://", {"Ref": "Domain"}, ".auth.", {"Ref": "AWS::Region"},
                                                  ".amazoncognito.com/oauth2/token"]]}},
    },
}  # fmt: skip


@pytest.fixture
def cognito() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("cognito-idp", region_name=REGION)


def test_the_pools_parts_are_made_with_their_oauth_settings_and_referred_to(cognito: Any) -> None:
    left = create_user_pools(cognito, TEMPLATE)
    assert left["Resources"] == {}
    [pool] = cognito.list_user_pools(MaxResults=10)["UserPools"]
    clients = {client["id"]: client for client in pool_clients(cognito, pool["Id"])}
    machine = clients[left["Outputs"]["MachineClientId"]["Value"]]
    assert (machine["flows"], machine["scopes"]) == (["client_credentials"], ["asya-n/admin"])
    [people] = [client for name, client in clients.items() if name != machine["id"]]
    assert (people["flows"], people["scopes"]) == (["code"], ["openid"])
    assert [g["GroupName"] for g in cognito.list_groups(UserPoolId=pool["Id"])["Groups"]] == ["admins"]
    domain = f"asya-n-{ACCOUNT}"
    assert cognito.describe_user_pool_domain(Domain=domain)["DomainDescription"]["UserPoolId"] == pool["Id"]
    token_url = left["Outputs"]["TokenUrl"]["Value"]
    assert token_url == {"Fn::Join": ["", ["https://", domain, ".auth.", {"Ref": "AWS::Region"},
                                           ".amazoncognito.com/oauth2/token"]]}  # fmt: skip
