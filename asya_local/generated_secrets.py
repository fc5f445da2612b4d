"""Secrets Manager secrets a template generates (`GenerateSecretString`), on the local stack: moto's
CloudFormation does not know them, so each is created through moto's Secrets Manager API before the
stack is, with a random value as AWS would generate, and the template refers to its ARN. The gateway's
cursor secret is one (`asya_cdk.gateway`)."""

from __future__ import annotations

import secrets
from typing import Any

from asya_local.template_refs import without_resources

SECRET = "AWS::SecretsManager::Secret"


def create_generated_secrets(secretsmanager: Any, template: dict[str, Any]) -> dict[str, Any]:
    """The template without its secrets, made through `secretsmanager` instead; a secret without a name
    gets a unique one, as CloudFormation gives it."""
    values: dict[tuple[str, str], str] = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != SECRET:
            continue
        properties = resource.get("Properties", {})
        name = properties.get("Name") or f"{logical_id}-{secrets.token_hex(6)}"
        created = secretsmanager.create_secret(
            Name=name, Description=properties.get("Description", ""), SecretString=secrets.token_urlsafe(48)
        )
        values[(logical_id, "Ref")] = values[(logical_id, "Id")] = created["ARN"]
    return without_resources(template, values)
