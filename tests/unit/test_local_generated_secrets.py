"""A secret the template generates (the gateway's cursor secret) is made through moto's Secrets Manager
before the stack, with a random value, and the template names its ARN: the gateway reads it as on AWS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya_gateway.callers import Caller
from asya_gateway.cursors import CursorKey
from asya_local.generated_secrets import create_generated_secrets

TEMPLATE = {
    "Resources": {
        "CursorSecret": {
            "Type": "AWS::SecretsManager::Secret",
            "Properties": {"Description": "cursors", "GenerateSecretString": {"PasswordLength": 64}},
        },
        "Api": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Environment": {"Variables": {"ASYA_GATEWAY_CURSOR_SECRET": {"Ref": "CursorSecret"}}}},
            "DependsOn": ["CursorSecret"],
        },
    }
}


@pytest.fixture
def secretsmanager() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="us-east-1")


def test_a_generated_secret_is_made_apart_and_the_template_names_its_arn(secretsmanager: Any) -> None:
    local = create_generated_secrets(secretsmanager, TEMPLATE)
    assert set(local["Resources"]) == {"Api"}
    assert "DependsOn" not in local["Resources"]["Api"]
    arn = local["Resources"]["Api"]["Properties"]["Environment"]["Variables"]["ASYA_GATEWAY_CURSOR_SECRET"]
    value = secretsmanager.get_secret_value(SecretId=arn)["SecretString"]
    assert len(value) >= 64
    again = create_generated_secrets(secretsmanager, TEMPLATE)["Resources"]["Api"]
    assert again["Properties"]["Environment"]["Variables"]["ASYA_GATEWAY_CURSOR_SECRET"] != arn, "each its own"


def test_the_gateway_seals_with_the_generated_secret(secretsmanager: Any) -> None:
    local = create_generated_secrets(secretsmanager, TEMPLATE)
    arn = local["Resources"]["Api"]["Properties"]["Environment"]["Variables"]["ASYA_GATEWAY_CURSOR_SECRET"]
    sealed = CursorKey(arn).bound(Caller("ana")).seal({"status": None})
    assert CursorKey(arn).bound(Caller("ana")).open(sealed, None) == {"status": None}
