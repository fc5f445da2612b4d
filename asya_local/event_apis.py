"""AppSync Event APIs on the local stack (FLY's fast lane, `asya_cdk.fly_api`): moto's CloudFormation
does not know them, and the local endpoint serves every one itself (`asya_local.endpoint.event_api`),
so a template's API and its channel namespaces are taken out and every reference to the API is
replaced by what the endpoint serves: its id (a digest of its name, the same at every deploy), its HTTP
domain `127.0.0.1:<endpoint port>/appsync/<id>` and its real-time one on the endpoint's WebSocket port.
A domain on loopback is reached over plain HTTP and WS (`asya.fly_channel.events_url`)."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

from asya_local.endpoint.process import endpoint_admin
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.template_refs import without_resources

API = "AWS::AppSync::Api"
CHANNEL_NAMESPACE = "AWS::AppSync::ChannelNamespace"


def create_event_apis(endpoint: str, template: dict[str, Any]) -> dict[str, Any]:
    """The template without its Event APIs and their namespaces, served by the endpoint at `endpoint`."""
    resources = template["Resources"]
    apis = [key for key, resource in resources.items() if resource["Type"] == API]
    if not apis:
        return template
    http_host = urlsplit(endpoint).netloc
    realtime_port = endpoint_admin(endpoint, "event-api")["realtime_port"]
    values: dict[tuple[str, str], str] = {}
    for logical_id in apis:
        name = str(resources[logical_id]["Properties"].get("Name", logical_id))
        api_id = hashlib.sha256(name.encode()).hexdigest()[:26]
        values |= {
            (logical_id, "ApiId"): api_id,
            (logical_id, "ApiArn"): f"arn:aws:appsync:{REGION}:{ACCOUNT}:apis/{api_id}",
            (logical_id, "Dns.Http"): f"{http_host}/appsync/{api_id}",
            (logical_id, "Dns.Realtime"): f"127.0.0.1:{realtime_port}/appsync/{api_id}",
        }
    namespaces = {(key, "Ref"): key for key, resource in resources.items() if resource["Type"] == CHANNEL_NAMESPACE}
    return without_resources(template, values | namespaces)
