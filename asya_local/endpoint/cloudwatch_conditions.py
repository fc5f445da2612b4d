"""CloudWatch's `cloudwatch:namespace` condition key, read from a `PutMetricData` request, so that a role
allowed to put metric data in one namespace only (x-backlog's, `asya_cdk.container_backlog`) is refused
locally what AWS refuses it.

CloudWatch's operations take no resource: the namespace is the only thing a grant can hold them to.
The request's `Namespace` is read in whichever protocol the client speaks: botocore speaks CBOR
(`smithy-rpc-v2-cbor`) to CloudWatch since 1.37, JSON or a query form before; the sidecar layer's
botocore may be either.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

SERVICE = "cloudwatch"  # IAM's prefix for CloudWatch; moto names its operations by its endpoint's, `monitoring`
NAMESPACE_KEY = "cloudwatch:namespace"


def namespace_condition(action: str, body: bytes) -> dict[str, tuple[str, ...]]:
    """`{"cloudwatch:namespace": (namespace,)}` for a `PutMetricData` that names one, else nothing (a
    condition on the key then fails, as on AWS for a request without it)."""
    if action != "PutMetricData" or not body:
        return {}
    namespace = _payload(body).get("Namespace")
    return {NAMESPACE_KEY: (namespace,)} if isinstance(namespace, str) else {}


def _payload(body: bytes) -> dict[str, Any]:
    if body[:1] == b"{":
        payload = json.loads(body)
    elif b"Action=" in body:
        payload = {key: values[0] for key, values in parse_qs(body.decode()).items()}
    else:
        from botocore.parsers import RpcV2CBORParser

        parser = RpcV2CBORParser()
        payload = parser.parse_data_item(parser.get_peekable_stream_from_bytes(body))
    return payload if isinstance(payload, dict) else {}
