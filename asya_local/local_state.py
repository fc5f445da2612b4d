"""`.asya/local.json`: where the local stack `asya up` runs is, for the other commands.

`asya up` writes it when the mesh is up and removes it when it stops; it holds the gateway's API key,
so only its owner may read it.
"""

from __future__ import annotations

import json
from pathlib import Path

from asya_local.gateway_client import GatewayClient
from asya_local.roles import LOCAL_CREDENTIALS
from asya_local.stack import LocalStack

STATE_FILE = Path(".asya/local.json")


class LocalStateError(RuntimeError):
    """No local stack is running (or its state file is unreadable)."""


def write_state(stack: LocalStack, config: Path, **more: str) -> None:
    """`.asya/local.json`: where the running local stack is, for the other commands."""
    STATE_FILE.parent.mkdir(exist_ok=True)
    state = {
        "endpoint": stack.endpoint,
        "stack": stack.stack_name,
        "namespace": stack.namespace,
        "bucket": stack.results_bucket,
        "tasks_table": stack.outputs.get("TasksTable", ""),
        "spark_batches_table": stack.outputs.get("SparkBatchesTable", ""),
        "config": str(config.resolve()),
        # the local administrator's key: what a client of this endpoint signs with (real AWS
        # credentials in the environment are refused here, with InvalidClientTokenId)
        "aws_access_key_id": LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        **more,
    }
    if stack.gateway_url is not None:
        state |= {"gateway_url": stack.gateway_url, "api_key": stack.api_key}
    STATE_FILE.touch(mode=0o600)  # it holds the API key
    STATE_FILE.write_text(json.dumps(state, indent=2))


def running_state() -> dict[str, str]:
    state = read_state()
    if state is None:
        raise LocalStateError(f"no local stack found ({STATE_FILE} missing): start one with `asya up`")
    return state


def read_state() -> dict[str, str] | None:
    try:
        return dict(json.loads(STATE_FILE.read_text()))
    except (OSError, ValueError):
        return None


def gateway_of(state: dict[str, str]) -> GatewayClient:
    if "gateway_url" not in state:
        raise LocalStateError("the running stack serves no gateway (its mesh deploys none)")
    return GatewayClient(state["gateway_url"], state["api_key"])
