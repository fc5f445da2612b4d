"""What the gateway's function runs with in the unit tests, in this process: fake credentials, its
region, and Powertools quiet (no metrics flushed, JSON logs)."""

from __future__ import annotations

from asya_local.functions.lambda_shapes import REGION

UNIT_ENVIRONMENT = {
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_DEV": "false",
    "POWERTOOLS_METRICS_DISABLED": "true",
}
# The mesh's API key, as the local stack's own tools send it: its holder sees every task (docs/callers.md).
OPERATOR_KEY = ("x-api-key", "unit-operator-key")
